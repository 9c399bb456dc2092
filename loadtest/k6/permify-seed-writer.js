// Permify's seed writer from its v1.6.9 load-test document, unchanged except that the endpoint, tenant, schema
// version, bearer token and (for the CI smoke) the number of ids come from the environment, and `options.cloud`:
//   k6 run -e PEMBA_URL=http://127.0.0.1:3476 -e PEMBA_TOKEN=<key> -e SCHEMA_VERSION=<version> permify-seed-writer.js
// The schema it seeds for is ./permify.perm (write it first: POST /v1/tenants/t1/schemas/write).

import { fail } from "k6";
import http from "k6/http";
import { BASE_URL, cloud, envNumber, jsonHeaders, TENANT_ID } from "./lib/env.js";
export const options = { vus: 1, iterations: 1, cloud };
const url = BASE_URL;
const TOTAL_IDS = envNumber("TOTAL_IDS", 100000);
const BATCH_SIZE = 1000;
function writeInBatches(items, key) {
  for (let start = 0; start < items.length; start += BATCH_SIZE) {
    const chunk = items.slice(start, start + BATCH_SIZE);
    const batchNumber = start / BATCH_SIZE + 1;
    const res = http.post(
      `${url}/v1/tenants/${TENANT_ID}/data/write`,
      JSON.stringify({
        metadata: { schema_version: __ENV.SCHEMA_VERSION || "" },
        [key]: chunk,
      }),
      {
        headers: jsonHeaders(),
        timeout: "120s",
      },
    );
    if (res.status < 200 || res.status >= 300) {
      console.error(
        `\nPOST /data/write ${key} batch ${batchNumber} FAILED status=${res.status}\nbody=\n${res.body}\n`,
      );
      fail(`POST /data/write ${key} batch ${batchNumber} non-2xx`);
    }
  }
}
export default function () {
  const tuples = [];
  const attributes = [];
  for (let i = 0; i < TOTAL_IDS; i++) {
    const id = String(i);
    const nextId = String((i + 1) % TOTAL_IDS);
    const blockedId = String((i + 2) % TOTAL_IDS);
    const isPublic = i % 4 === 0;
    tuples.push(
      {
        entity: { type: "user", id },
        relation: "self",
        subject: { type: "user", id, relation: "" },
      },
      {
        entity: { type: "user", id },
        relation: "follower",
        subject: { type: "user", id: nextId, relation: "" },
      },
      {
        entity: { type: "user", id },
        relation: "blocked",
        subject: { type: "user", id: blockedId, relation: "" },
      },
      {
        entity: { type: "content", id },
        relation: "owner",
        subject: { type: "user", id, relation: "" },
      },
      {
        entity: { type: "interaction", id },
        relation: "creator",
        subject: { type: "user", id, relation: "" },
      },
      {
        entity: { type: "interaction", id },
        relation: "parent",
        subject: { type: "content", id, relation: "" },
      },
    );
    attributes.push(
      {
        entity: { type: "user", id },
        attribute: "is_public",
        value: { boolean: isPublic },
      },
      {
        entity: { type: "content", id },
        attribute: "is_public",
        value: { boolean: isPublic },
      },
    );
  }
  writeInBatches(tuples, "tuples");
  writeInBatches(attributes, "attributes");
  console.log(`Seeded ${TOTAL_IDS} users, ${TOTAL_IDS} contents, and ${TOTAL_IDS} interactions`);
}
