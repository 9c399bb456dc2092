// ZITADEL's machine-JWT soak (its v2.70 benchmark: 600 VUs for 30 minutes), for Pemba: every VU is a machine
// client with its own access token (JWTs signed by a local key; Pemba verifies them against the issuer's JWKS),
// looping without sleep over a mixed read/write load on ./zitadel.perm:
//   70% check (document view or edit), 10% write a viewer tuple, 5% delete it again, 10% read relationships,
//   5% lookup-entity (documents the user can view, first page of 20).
// setup() (as the first client) writes the schema and DOCS documents in ORGS organizations.
//   k6 run -e PEMBA_URL=... -e TOKENS_FILE=tokens.json [-e VUS=600 -e DURATION=30m] zitadel-soak.js
// TOKENS_FILE: a JSON array of access tokens (VU n uses token n-1, round robin); or PEMBA_TOKEN for one token.

import { check, fail } from "k6";
import { SharedArray } from "k6/data";
import http from "k6/http";
import { BASE_URL, cloud, envNumber, jsonHeaders, TENANT_ID, TOKEN } from "./lib/env.js";

const tokens = new SharedArray("tokens", () =>
  __ENV.TOKENS_FILE ? JSON.parse(open(__ENV.TOKENS_FILE)) : [TOKEN],
);
const SCHEMA = open("./zitadel.perm");
const DOCS = envNumber("DOCS", 10000);
const ORGS = envNumber("ORGS", 100);
const USERS = envNumber("USERS", 5000);

export const options = {
  cloud,
  vus: envNumber("VUS", 600),
  duration: __ENV.DURATION || "30m",
  setupTimeout: "10m",
  // no limits: these make k6 report each request kind's latency (as ZITADEL's "Endpoint latencies")
  thresholds: Object.fromEntries(
    ["check", "write", "delete", "read", "lookup-entity"].map((n) => [
      `http_req_duration{name:${n}}`,
      ["max>=0"],
    ]),
  ),
};

const api = `${BASE_URL}/v1/tenants/${TENANT_ID}`;
const rand = (n) => Math.floor(Math.random() * n);
const paramsFor = (token, name) => ({ headers: jsonHeaders(token), timeout: "60s", tags: { name } });

function ref(type, id, relation = "") {
  return { type, id: String(id), relation };
}

export function setup() {
  const params = paramsFor(tokens[0], "setup");
  const post = (path, body) => {
    const res = http.post(`${api}${path}`, JSON.stringify(body), params);
    if (res.status !== 200) fail(`POST ${path}: ${res.status} ${res.body}`);
  };
  post("/schemas/write", { schema: SCHEMA });
  let batch = [];
  const flush = () => {
    if (batch.length > 0) post("/data/write", { metadata: {}, tuples: batch });
    batch = [];
  };
  const add = (entity, relation, subject) => {
    batch.push({ entity, relation, subject });
    if (batch.length === 1000) flush();
  };
  for (let o = 0; o < ORGS; o++) {
    add(ref("organization", o), "admin", ref("user", o % USERS));
    for (let m = 1; m <= 10; m++) add(ref("organization", o), "member", ref("user", (o * 10 + m) % USERS));
  }
  for (let d = 0; d < DOCS; d++) {
    add(ref("document", d), "org", ref("organization", d % ORGS));
    add(ref("document", d), "owner", ref("user", d % USERS));
  }
  flush();
}

export default function () {
  const token = tokens[(__VU - 1) % tokens.length];
  const doc = rand(DOCS);
  const user = rand(USERS);
  const r = Math.random();
  let res;
  let name;
  if (r < 0.7) {
    name = "check";
    res = http.post(
      `${api}/permissions/check`,
      JSON.stringify({
        metadata: { depth: 20 },
        entity: ref("document", doc),
        permission: Math.random() < 0.5 ? "view" : "edit",
        subject: ref("user", user),
      }),
      paramsFor(token, name),
    );
  } else if (r < 0.8) {
    name = "write";
    const tuple = {
      entity: ref("document", doc),
      relation: "viewer",
      subject: ref("user", `machine${__VU}`),
    };
    res = http.post(
      `${api}/data/write`,
      JSON.stringify({ metadata: {}, tuples: [tuple] }),
      paramsFor(token, name),
    );
  } else if (r < 0.85) {
    name = "delete";
    const filter = {
      entity: { type: "document", ids: [String(doc)] },
      relation: "viewer",
      subject: { type: "user", ids: [`machine${__VU}`], relation: "" },
    };
    res = http.post(
      `${api}/data/delete`,
      JSON.stringify({ tuple_filter: filter, attribute_filter: {} }),
      paramsFor(token, name),
    );
  } else if (r < 0.95) {
    name = "read";
    const filter = {
      entity: { type: "document", ids: [String(doc)] },
      relation: "",
      subject: { type: "", ids: [], relation: "" },
    };
    res = http.post(
      `${api}/data/relationships/read`,
      JSON.stringify({ metadata: {}, filter, page_size: 10 }),
      paramsFor(token, name),
    );
  } else {
    name = "lookup-entity";
    res = http.post(
      `${api}/permissions/lookup-entity`,
      JSON.stringify({
        metadata: { depth: 20 },
        entity_type: "document",
        permission: "view",
        subject: ref("user", user),
        page_size: 20,
      }),
      paramsFor(token, name),
    );
  }
  check(res, {
    "token accepted": (x) => x.status !== 401 && x.status !== 403,
    [`${name} status ok`]: (x) => x.status === 200,
  });
}
