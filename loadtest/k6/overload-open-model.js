// Overload in the open model (bench-overload.ts --k6): checks at a constant arrival rate (sent on schedule whether
// or not the earlier ones were answered; iterations with no free VU are dropped, never queued in k6), and /healthz
// ten times a second beside them. Counts the answers by kind: 200, shed (429 or 503, each with Retry-After or not),
// other statuses, and no answer within the 10 s timeout.
//   k6 run -e PEMBA_URL=http://127.0.0.1:3476 -e RATE=3000 -e DURATION=15s overload-open-model.js

import { check } from "k6";
import http from "k6/http";
import { Counter, Trend } from "k6/metrics";
import { BASE_URL, jsonHeaders, TENANT_ID } from "./lib/env.js";

const rate = Number(__ENV.RATE || 1000);
const duration = __ENV.DURATION || "15s";
export const options = {
  discardResponseBodies: true,
  scenarios: {
    checks: {
      executor: "constant-arrival-rate",
      exec: "checks",
      rate,
      timeUnit: "1s",
      duration,
      preAllocatedVUs: Number(__ENV.PRE_VUS || Math.max(50, Math.ceil(rate / 10))),
      maxVUs: Number(__ENV.MAX_VUS || Math.max(200, Math.ceil(rate * 2))),
    },
    healthz: {
      executor: "constant-arrival-rate",
      exec: "healthz",
      rate: 10,
      timeUnit: "1s",
      duration,
      preAllocatedVUs: 5,
      maxVUs: 50,
    },
  },
  summaryTrendStats: ["med", "p(99)", "max"],
};

const answered = new Trend("check_answered_ms", true);
const ok = new Counter("check_200");
const shed = new Counter("check_shed");
const shedWithoutRetryAfter = new Counter("check_shed_without_retry_after");
const other = new Counter("check_other_status");
const noAnswer = new Counter("check_no_answer");
const healthMs = new Trend("healthz_ms", true);
const healthBad = new Counter("healthz_not_200");

const url = `${BASE_URL}/v1/tenants/${TENANT_ID}/permissions/check`;
const body = JSON.stringify({
  metadata: { depth: 20 },
  entity: { type: "doc", id: "1" },
  permission: "view",
  subject: { type: "user", id: "1" },
});
const params = { headers: jsonHeaders(), timeout: "10s", tags: { name: "check" } };

export function checks() {
  const r = http.post(url, body, params);
  if (r.status === 0) noAnswer.add(1);
  else if (r.status === 200) {
    ok.add(1);
    answered.add(r.timings.duration);
  } else if (r.status === 429 || r.status === 503) {
    shed.add(1);
    if (!r.headers["Retry-After"]) shedWithoutRetryAfter.add(1);
  } else other.add(1);
  check(r, { "answered (200, or shed with 429/503)": (x) => [200, 429, 503].includes(x.status) });
}

export function healthz() {
  const r = http.get(`${BASE_URL}/healthz`, { timeout: "10s", tags: { name: "healthz" } });
  healthMs.add(r.timings.duration);
  if (r.status !== 200) healthBad.add(1);
}
