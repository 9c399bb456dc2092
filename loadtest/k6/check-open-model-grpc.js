// The open-model check load of check-open-model.js over gRPC (k6/net/grpc): the same arrival model and request mix,
// sent as base.v1.Permission/Check to Pemba's gRPC port (`pemba serve --grpc-port`), the protos from
// packages/core/proto (Permify's, Apache-2.0). One connection per VU, opened on its first iteration.
//   k6 run -e PEMBA_GRPC=127.0.0.1:3478 -e PEMBA_TOKEN=<key> -e SCHEMA_VERSION=<v> -e RATE=2000 \
//     -e DURATION=60s check-open-model-grpc.js

import { check } from "k6";
import grpc from "k6/net/grpc";
import { envNumber, TENANT_ID, TOKEN } from "./lib/env.js";

const rate = Number(__ENV.RATE || 1000);
const TOTAL_IDS = envNumber("TOTAL_IDS", 100000);
const ADDRESS = __ENV.PEMBA_GRPC || "127.0.0.1:3478";
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

const client = new grpc.Client();
client.load(["../../packages/core/proto"], "base/v1/service.proto");
const params = { metadata: TOKEN === "" ? {} : { authorization: `Bearer ${TOKEN}` }, timeout: "10s" };
let connected = false;

function getRandomId() {
  return Math.floor(Math.random() * TOTAL_IDS).toString();
}
const reuseIdProbability = 0.1;
let currentEntityId = getRandomId();
let currentSubjectId = getRandomId();

export default function () {
  if (!connected) {
    client.connect(ADDRESS, { plaintext: true });
    connected = true;
  }
  const entityType = Math.random() < 0.5 ? "content" : "interaction";
  let entityId;
  let subjectId;
  if (Math.random() < reuseIdProbability) entityId = currentEntityId;
  else currentEntityId = entityId = getRandomId();
  if (Math.random() < reuseIdProbability) subjectId = currentSubjectId;
  else currentSubjectId = subjectId = getRandomId();
  const response = client.invoke(
    "base.v1.Permission/Check",
    {
      tenant_id: TENANT_ID,
      metadata: { snap_token: "", schema_version: __ENV.SCHEMA_VERSION || "", depth: 20 },
      entity: { type: entityType, id: entityId },
      permission: "view",
      subject: { type: "user", id: subjectId },
    },
    params,
  );
  check(response, {
    "is status OK": (r) => r && r.status === grpc.StatusOK,
    "has a decision": (r) =>
      r && r.status === grpc.StatusOK && /CHECK_RESULT_(ALLOWED|DENIED)/.test(r.message.can),
  });
}
