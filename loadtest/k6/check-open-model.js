// Open-model check load (permify scenario's stepping variant, bench-http.ts): a constant arrival rate with no sleep,
// the request mix of Permify's k6test.js (content/interaction `view`, random ids in 0..TOTAL_IDS-1, 10% id reuse).
// Iterations that find no free VU are dropped (dropped_iterations), never queued. ZIPF_S=1.0 draws ids from a Zipf
// distribution instead (rank r with weight 1/r^s; ranks spread over the ids by a fixed stride), the hot keys a
// working set holds.
//   k6 run -e PEMBA_URL=http://127.0.0.1:3476 -e PEMBA_TOKEN=<key> -e SCHEMA_VERSION=<v> -e RATE=2000 \
//     -e DURATION=60s check-open-model.js

import { check } from "k6";
import http from "k6/http";
import { BASE_URL, cloud, envNumber, jsonHeaders, TENANT_ID } from "./lib/env.js";

const rate = Number(__ENV.RATE || 1000);
const TOTAL_IDS = envNumber("TOTAL_IDS", 100000);
export const options = {
  cloud,
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

const url = `${BASE_URL}/v1/tenants/${TENANT_ID}/permissions/check`;
const params = { headers: jsonHeaders(), timeout: "10s" };

const ZIPF_S = Number(__ENV.ZIPF_S || 0);
/**
 * A Zipf sampler over ranks 1..n with exponent s (rank r with weight 1/r^s), by rejection-inversion (Hörmann and
 * Derflinger, "Rejection-inversion to generate variates from monotone discrete distributions", 1996; the method of
 * Apache Commons RNG's RejectionInversionZipfSampler): exact, O(1) memory and time per draw, so every VU of a run over
 * millions of ids starts at once (a table of cumulative weights would be n doubles per VU).
 */
function zipfSampler(n, s) {
  const helper1 = (x) => (Math.abs(x) > 1e-8 ? Math.log1p(x) / x : 1 - x * (0.5 - x * (1 / 3 - 0.25 * x)));
  const helper2 = (x) =>
    Math.abs(x) > 1e-8 ? Math.expm1(x) / x : 1 + x * 0.5 * (1 + (x / 3) * (1 + 0.25 * x));
  const h = (x) => Math.exp(-s * Math.log(x));
  const hIntegral = (x) => {
    const logX = Math.log(x);
    return helper2((1 - s) * logX) * logX;
  };
  const hIntegralInverse = (x) => {
    const t = Math.max(-1, x * (1 - s));
    return Math.exp(helper1(t) * x);
  };
  const hIntegralX1 = hIntegral(1.5) - 1;
  const hIntegralN = hIntegral(n + 0.5);
  const sv = 2 - hIntegralInverse(hIntegral(2.5) - h(2));
  return () => {
    for (;;) {
      const u = hIntegralN + Math.random() * (hIntegralX1 - hIntegralN);
      const x = hIntegralInverse(u);
      const k = Math.min(n, Math.max(1, Math.floor(x + 0.5)));
      if (k - x <= sv || u >= hIntegral(k + 0.5) - h(k)) return k;
    }
  };
}
const zipfRank = ZIPF_S > 0 ? zipfSampler(TOTAL_IDS, ZIPF_S) : undefined;
/** A stride coprime with the usual id counts (10^k and multiples of 2 and 5), so hot ranks are spread over ids. */
const STRIDE = 7919;

function getRandomId() {
  if (zipfRank === undefined) return Math.floor(Math.random() * TOTAL_IDS).toString();
  return (((zipfRank() - 1) * STRIDE) % TOTAL_IDS).toString();
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
