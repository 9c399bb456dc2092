// zanzigo's benchmark (README "Benchmark"): 3 tuples per id over IDS ids (default 10,000)
//   group:mygroup{ID}#member@user:myuser{ID}
//   doc:mydoc{ID}#parent@folder:myfolder{ID}
//   folder:myfolder{ID}#viewer@group:mygroup{ID}#member
// then VUS looping VUs (default 100) for DURATION (default 1m), each checking doc:mydoc{ID}#viewer@user:myuser{ID}
// for a random ID (allowed through the folder and the group: a tree walk) and sleeping 1 s, as zanzigo's runs did.
// setup() writes the schema (./zanzigo.perm) and, when doc:mydoc0 is not yet viewable by user:myuser0, the tuples.
//   k6 run -e PEMBA_URL=http://127.0.0.1:3476 -e PEMBA_TOKEN=<key> -e VUS=1000 zanzigo-check.js

import { check, fail, sleep } from "k6";
import http from "k6/http";
import { BASE_URL, cloud, envNumber, jsonHeaders, TENANT_ID } from "./lib/env.js";

const IDS = envNumber("IDS", 10000);
const SCHEMA = open("./zanzigo.perm");
export const options = {
  cloud,
  vus: envNumber("VUS", 100),
  duration: __ENV.DURATION || "1m",
  setupTimeout: "10m",
  // no limit: makes k6 report the checks' latency apart from setup()'s writes
  thresholds: { "http_req_duration{name:check}": ["max>=0"] },
};

const api = `${BASE_URL}/v1/tenants/${TENANT_ID}`;
const params = { headers: jsonHeaders(), timeout: "60s" };
const checkParams = { ...params, tags: { name: "check" } };

function post(path, body) {
  const res = http.post(`${api}${path}`, JSON.stringify(body), params);
  if (res.status !== 200) fail(`POST ${path}: ${res.status} ${res.body}`);
  return res.json();
}

function checkBody(id) {
  return JSON.stringify({
    metadata: { depth: 20 },
    entity: { type: "doc", id: `mydoc${id}` },
    permission: "viewer",
    subject: { type: "user", id: `myuser${id}` },
  });
}

function tuple(entityType, entityId, relation, subjectType, subjectId, subjectRelation = "") {
  return {
    entity: { type: entityType, id: entityId },
    relation,
    subject: { type: subjectType, id: subjectId, relation: subjectRelation },
  };
}

export function setup() {
  post("/schemas/write", { schema: SCHEMA });
  const probe = http.post(`${api}/permissions/check`, checkBody(0), params);
  if (probe.status === 200 && probe.json("can") === "CHECK_RESULT_ALLOWED") return;
  const started = Date.now();
  let batch = [];
  for (let i = 0; i < IDS; i++) {
    batch.push(
      tuple("group", `mygroup${i}`, "member", "user", `myuser${i}`),
      tuple("doc", `mydoc${i}`, "parent", "folder", `myfolder${i}`),
      tuple("folder", `myfolder${i}`, "viewer", "group", `mygroup${i}`, "member"),
    );
    if (batch.length >= 999 || i === IDS - 1) {
      post("/data/write", { metadata: {}, tuples: batch });
      batch = [];
    }
  }
  console.log(`Seeded ${3 * IDS} tuples in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

export default function () {
  const id = Math.floor(Math.random() * IDS);
  const res = http.post(`${api}/permissions/check`, checkBody(id), checkParams);
  check(res, {
    "is status 200": (r) => r.status === 200,
    "is allowed": (r) => r.status === 200 && r.json("can") === "CHECK_RESULT_ALLOWED",
  });
  sleep(1);
}
