// Permify's check load test (k6test.js) from its v1.6.9 load-test document, unchanged except that the endpoint,
// tenant, schema version and token come from the environment, `options.cloud` (from the v1.3 document), and, for
// the CI smoke, TIME_SCALE (stage durations x TIME_SCALE) and TOTAL_IDS (ids drawn from 0..TOTAL_IDS-1):
//   k6 run -e PEMBA_URL=http://127.0.0.1:3476 -e PEMBA_TOKEN=<key> -e SCHEMA_VERSION=<version> permify-check.js

import { check, sleep } from "k6";
import http from "k6/http";
import { BASE_URL, cloud, envNumber, scaled, TENANT_ID, TOKEN } from "./lib/env.js";

const TOTAL_IDS = envNumber("TOTAL_IDS", 100000);
export const options = {
  cloud,
  scenarios: {
    contacts_load: {
      executor: "ramping-arrival-rate",
      startRate: 10, // starting rate of new iterations per timeUnit
      timeUnit: "1s", // new iterations per second
      preAllocatedVUs: 50, // minimum number of VUs before the test starts
      maxVUs: 100, // maximum number of VUs during the test
      stages: [
        { target: 100, duration: scaled(10) }, // Warm-up phase
        { target: 1000, duration: scaled(30) }, // Warm-up phase
        { target: 10000, duration: scaled(60) }, // Ramp up to full load
      ],
    },
  },
};
function getRandomId() {
  return Math.floor(Math.random() * TOTAL_IDS).toString();
}
const reuseIdProbability = 0.1;
let currentEntityId = getRandomId();
let currentSubjectId = getRandomId();
export default function () {
  let entityId, subjectId;
  const entityType = Math.random() < 0.5 ? "content" : "interaction";
  // Decide whether to reuse the current ID for the entity
  if (Math.random() < reuseIdProbability) {
    entityId = currentEntityId; // Reuse the existing entity ID
  } else {
    entityId = getRandomId(); // Generate a new entity ID
    currentEntityId = entityId; // Update current entity ID
  }
  // Decide whether to reuse the current ID for the subject
  if (Math.random() < reuseIdProbability) {
    subjectId = currentSubjectId; // Reuse the existing subject ID
  } else {
    subjectId = getRandomId(); // Generate a new subject ID
    currentSubjectId = subjectId; // Update current subject ID
  }
  const url = `${BASE_URL}/v1/tenants/${TENANT_ID}/permissions/check`;
  const payload = JSON.stringify({
    metadata: {
      snap_token: "",
      schema_version: __ENV.SCHEMA_VERSION || "",
      depth: 20,
    },
    entity: {
      type: entityType,
      id: entityId,
    },
    permission: "view",
    subject: {
      type: "user",
      id: subjectId,
    },
    page_size: 20,
  });
  const params = {
    headers: {
      "Content-Type": "application/json",
      Authorization: `Bearer ${TOKEN || "<your-token>"}`,
    },
    timeout: 360000,
  };
  const response = http.post(url, payload, params);
  //console.log(response);
  check(response, {
    "is status 200": (r) => r.status === 200,
  });
  sleep(1);
}
