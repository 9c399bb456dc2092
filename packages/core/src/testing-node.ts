/**
 * @pemba/core/testing/node, Node-only test support: a throwaway PostgreSQL server, a real libSQL server (sqld), a
 * TCP forwarder that delays (servers a region apart), an sqld primary with its replicas across such forwarders,
 * read-your-writes over the API with snap tokens, a free port,
 * the app served over real HTTP on a random port, and an OTLP/HTTP receiver for trace and log exports.
 */

export { startTestServer, TEST_SCHEMA, type TestServer } from "./http/testing/harness.ts";
export { type Listening, listen } from "./http/testing/node-listen.ts";
export {
  type OtlpReceiver,
  type ReceivedLog,
  type ReceivedSpan,
  startOtlpReceiver,
} from "./observe/testing/otlp-receiver.ts";
export { type DelayProxy, startDelayProxy } from "./store/testing/delay-proxy.ts";
export { freePort } from "./store/testing/free-port.ts";
export { type PostgresServer, startPostgres } from "./store/testing/postgres-server.ts";
export {
  type SqldReplicaSet,
  type SqldReplicaSetOptions,
  startSqldReplicaSet,
} from "./store/testing/sqld-replicas.ts";
export {
  describeWithSqld,
  findSqld,
  type RecordingProxy,
  recordRequests,
  type SqldKey,
  type SqldOptions,
  type SqldServer,
  sqldKey,
  startSqld,
} from "./store/testing/sqld-server.ts";
export {
  type Fetcher,
  prepareTokenReads,
  type ReplicaRestartReads,
  runTokenReads,
  TOKEN_READS_SCHEMA,
  type TokenReadsOptions,
  type TokenReadsResult,
  tokenReadsThroughRestart,
  tokenReadsUntil,
} from "./store/testing/token-reads.ts";
export {
  AUTHZEN_AUTH_KEYS,
  AUTHZEN_KEY,
  AUTHZEN_OTHER_KEY,
  AUTHZEN_ROOT_TENANT,
  type AuthzenServer,
  describeAuthzen,
} from "./testing/authzen/suite.ts";
