// Open-model check load for bench-http.ts: a constant arrival rate with no sleep, the request mix of Permify's
// k6test.js (content/interaction `view`, random ids in 0..99,999, 10% id reuse).
//   k6 run -e PEMBA_URL=http://127.0.0.1:3476 -e TENANT_ID=t1 -e SCHEMA_VERSION=<v> -e RATE=2000 -e DURATION=60s \
//     check-open-model.js

import { check } from "k6";
import http from "k6/http";

const rate = Number(__ENV.RATE || 1000);
export const options = {
  discardResponseBodies: false,
  scenarios: {
    open_model: {
      executor: "constant-arrival-rate",
      rate,
      timeUnit: "1s",
      duration: __ENV.DURATION || "60s",
      preAllocatedVUs: Number(__ENV.PRE_VUS || Math.max(20, Math.ceil(rate / 50))),
      maxVUs: Number(__ENV.MAX_VUS || Math.max(100, Math.ceil(rate / 10))),
    },
  },
};

const url = `${__ENV.PEMBA_URL || "http://127.0.0.1:3476"}/v1/tenants/${__ENV.TENANT_ID || "t1"}/permissions/check`;
const params = { headers: { "Content-Type": "application/json" }, timeout: "10s" };

function getRandomId() {
  return Math.floor(Math.random() * 100000).toString();
}
const reuseIdProbability = 0.1;
let currentEntityId = getRandomId();
let currentSubjectId = getRandomId();

export default function () {
  const entityType = Math.random() < 0.5 ? "content" : "interaction";
  let entityId;
  let subjectId;
  if (Math.random() < reuseIdProbability) entityId = currentEntityId;
  else currentEntityId = entityId = getRandomId();
  if (Math.random() < reuseIdProbability) subjectId = currentSubjectId;
  else currentSubjectId = subjectId = getRandomId();
  const payload = JSON.stringify({
    metadata: { snap_token: "", schema_version: __ENV.SCHEMA_VERSION || "", depth: 20 },
    entity: { type: entityType, id: entityId },
    permission: "view",
    subject: { type: "user", id: subjectId },
    page_size: 20,
  });
  const response = http.post(url, payload, params);
  check(response, {
    "is status 200": (r) => r.status === 200,
    "has a decision": (r) => r.status === 200 && /CHECK_RESULT_(ALLOWED|DENIED)/.test(r.body),
  });
}
