// flagd's load test, for Pemba: a random schema and data from loadtest/generate.ts (flagd: ff_gen.go's
// random.json) and a closed-model check load without sleep (VUS looping VUs for DURATION), each request a random
// question of the file whose decision is asserted against the answer the generated data implies.
// setup() writes the schema and the data (batches of 1,000) unless SEED=0 (already seeded).
//   node --experimental-strip-types loadtest/generate.ts --out /tmp/random.json
//   k6 run -e PEMBA_URL=http://127.0.0.1:3476 -e PEMBA_TOKEN=<key> -e DATA_FILE=/tmp/random.json flagd-check.js

import { check, fail } from "k6";
import { SharedArray } from "k6/data";
import http from "k6/http";
import { BASE_URL, cloud, envNumber, jsonHeaders, TENANT_ID } from "./lib/env.js";

const DATA_FILE = __ENV.DATA_FILE || "./random.json";
// one parse, shared by every VU
const data = new SharedArray("generated", () => {
  const d = JSON.parse(open(DATA_FILE));
  return [{ schema: d.schema, tuples: d.tuples, attributes: d.attributes }];
});
const questions = new SharedArray("checks", () => JSON.parse(open(DATA_FILE)).checks);

export const options = {
  cloud,
  vus: envNumber("VUS", 20),
  duration: __ENV.DURATION || "60s",
  setupTimeout: "10m",
};

const api = `${BASE_URL}/v1/tenants/${TENANT_ID}`;
const params = { headers: jsonHeaders(), timeout: "60s" };

function post(path, body) {
  const res = http.post(`${api}${path}`, JSON.stringify(body), params);
  if (res.status !== 200) fail(`POST ${path}: ${res.status} ${res.body}`);
  return res.json();
}

export function setup() {
  if (__ENV.SEED === "0") return;
  const { schema, tuples, attributes } = data[0];
  post("/schemas/write", { schema });
  const started = Date.now();
  for (let i = 0; i < tuples.length; i += 1000)
    post("/data/write", { metadata: {}, tuples: tuples.slice(i, i + 1000) });
  for (let i = 0; i < attributes.length; i += 1000) {
    post("/data/write", { metadata: {}, attributes: attributes.slice(i, i + 1000) });
  }
  console.log(
    `Seeded ${tuples.length} tuples and ${attributes.length} attributes in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
}

export default function () {
  const q = questions[Math.floor(Math.random() * questions.length)];
  const res = http.post(
    `${api}/permissions/check`,
    JSON.stringify({
      metadata: { depth: 20 },
      entity: q.entity,
      permission: q.permission,
      subject: q.subject,
    }),
    params,
  );
  check(res, {
    "is status 200": (r) => r.status === 200,
    "decision as generated": (r) => r.status === 200 && r.json("can") === q.expected,
  });
}
