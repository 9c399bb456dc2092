/**
 * The replication lag of the replicated load-test databases, alone (no Pemba): a PostgreSQL primary with a
 * streaming replica, and a sqld primary with two sqld replicas, each probed by a row written at the primary every
 * 200 ms and timed until every replica shows it (lib/replicated.ts, what `pnpm loadtest zanzigo --target
 * node-postgres-replicas|node-libsql-replicated` reports beside its checks).
 *
 *   node --experimental-strip-types --no-warnings loadtest/replica-lag.ts [--seconds 20]
 */
import { parseArgs } from "node:util";
import { startLibsqlReplicated, startPostgresReplicas } from "./lib/replicated.ts";
import { loadAverage } from "./lib/report.ts";

const { values } = parseArgs({ options: { seconds: { type: "string", default: "20" } } });
const seconds = Number(values.seconds);
console.log(`load average before: ${loadAverage()}`);
for (const start of [startPostgresReplicas, startLibsqlReplicated]) {
  const db = await start();
  try {
    const stop = db.probeLag();
    await new Promise((done) => setTimeout(done, seconds * 1000));
    const lag = await stop();
    console.log(
      `${db.label}\n  lag over ${lag.samples} probes: p50 ${lag.p50.toFixed(1)} ms, p95 ${lag.p95.toFixed(1)} ms, max ${lag.max.toFixed(1)} ms`,
    );
  } finally {
    await db.stop();
  }
}
console.log(`load average after: ${loadAverage()}`);
