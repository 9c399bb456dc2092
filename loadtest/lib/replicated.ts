/**
 * The replicated databases of the load-test targets: a throwaway PostgreSQL primary with a streaming replica
 * (pg_basebackup -R), or a sqld primary with two sqld replicas, on 127.0.0.1. Each measures what a replicated
 * deployment is about: the primary's CPU (every process of the server, from /proc) and the replication lag, probed
 * by a row written at the primary and timed until every replica shows it.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { cpuSeconds, descendants } from "./proc.ts";

export interface LagStats {
  samples: number;
  p50: number;
  p95: number;
  max: number;
}

export interface ReplicatedDatabase {
  url: string;
  replicaUrls: string[];
  label: string;
  /** CPU seconds (user + system) the primary's processes used so far. */
  primaryCpuSeconds(): number;
  /** Starts probing the replication lag (a write at the primary every 200 ms); the stop answers the lag in ms. */
  probeLag(): () => Promise<LagStats>;
  stop(): Promise<void>;
}

/** What the probe needs of a database: run a statement, and the probe table's newest row there. */
interface ProbeLink {
  run(sql: string): Promise<void>;
  newest(): Promise<number>;
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function lagProbe(primary: ProbeLink, replicas: ProbeLink[]): () => Promise<LagStats> {
  const lags: number[] = [];
  let running = true;
  const loop = (async () => {
    await primary.run("CREATE TABLE IF NOT EXISTS pemba_lag_probe (n BIGINT NOT NULL)");
    for (let n = Date.now(); running; n++) {
      await primary.run(`INSERT INTO pemba_lag_probe (n) VALUES (${n})`);
      const written = performance.now();
      for (const replica of replicas) {
        for (let polls = 0; polls < 5000; polls++) {
          if ((await replica.newest().catch(() => 0)) >= n) break;
          await sleep(1);
        }
      }
      lags.push(performance.now() - written);
      await sleep(200);
    }
  })();
  return async () => {
    running = false;
    await loop;
    await Promise.all([primary, ...replicas].map((l) => l.close()));
    const sorted = [...lags].sort((a, b) => a - b);
    return {
      samples: sorted.length,
      p50: percentile(sorted, 50),
      p95: percentile(sorted, 95),
      max: sorted.at(-1) ?? NaN,
    };
  };
}

const NEWEST = "SELECT coalesce(max(n), 0) AS n FROM pemba_lag_probe";

/** The CPU of a process and every descendant. */
/**
 * The CPU of a process, of its live descendants, and of the children it reaped (cutime + cstime: a PostgreSQL
 * backend that exits moves its CPU there), so the total never goes back when a connection closes.
 */
function treeCpu(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  const reaped = (Number(fields[13]) + Number(fields[14])) / CLOCK_TICKS;
  let total = cpuSeconds(pid) + reaped;
  for (const p of descendants(pid)) total += p.cpuSeconds;
  return total;
}

const CLOCK_TICKS = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;

/** The postmaster listening on `port` (its command line names the port). */
function postmasterOf(port: string): number {
  for (const p of descendants(1)) {
    if (p.comm !== "postgres") continue;
    try {
      const args = readFileSync(`/proc/${p.pid}/cmdline`, "utf8").split("\0");
      // pg_ctl passes the server's options as one argument: "-p <port> -k <dir> ..."
      if (args.some((a) => a === `-p ${port}` || a.startsWith(`-p ${port} `))) return p.pid;
      if (args.some((a, i) => a === "-p" && args[i + 1] === port)) return p.pid;
    } catch {
      // gone
    }
  }
  throw new Error(`no postmaster on port ${port}`);
}

export async function startPostgresReplicas(): Promise<ReplicatedDatabase> {
  const { startPostgres } = await import("@pemba/core/testing/node");
  const { PostgresStore } = await import("@pemba/core/node");
  const primary = await startPostgres();
  // the tables before the base backup: a hot standby refuses DDL
  await (await PostgresStore.open(primary.url)).close();
  const replica = await primary.startReplica();
  const pg = createRequire(import.meta.resolve("@pemba/core/node"))("pg") as {
    Client: new (o: {
      connectionString: string;
    }) => {
      connect(): Promise<void>;
      query(sql: string): Promise<{ rows: Record<string, unknown>[] }>;
      end(): Promise<void>;
    };
  };
  const link = async (url: string): Promise<ProbeLink> => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    return {
      run: async (sql) => void (await client.query(sql)),
      newest: async () => Number((await client.query(NEWEST)).rows[0]!.n),
      close: () => client.end(),
    };
  };
  const postmaster = postmasterOf(new URL(primary.url).port);
  return {
    url: primary.url,
    replicaUrls: [replica.url],
    label: `PostgreSQL ${primary.url} with a streaming replica ${replica.url} (pg_basebackup -R, hot standby)`,
    primaryCpuSeconds: () => treeCpu(postmaster),
    probeLag: () => {
      const links = Promise.all([link(primary.url), link(replica.url)]);
      let stop: (() => Promise<LagStats>) | undefined;
      const started = links.then(([p, r]) => {
        stop = lagProbe(p, [r]);
      });
      return async () => {
        await started;
        return stop!();
      };
    },
    async stop() {
      await replica.stop();
      await primary.stop();
    },
  };
}

/** A PostgreSQL primary alone, measured the same way (the baseline of the replicas' CPU saving). */
export async function startPostgresAlone(): Promise<ReplicatedDatabase> {
  const { startPostgres } = await import("@pemba/core/testing/node");
  const primary = await startPostgres();
  const postmaster = postmasterOf(new URL(primary.url).port);
  return {
    url: primary.url,
    replicaUrls: [],
    label: `PostgreSQL ${primary.url}`,
    primaryCpuSeconds: () => treeCpu(postmaster),
    probeLag: () => async () => ({ samples: 0, p50: NaN, p95: NaN, max: NaN }),
    stop: () => primary.stop(),
  };
}

export async function startLibsqlReplicated(): Promise<ReplicatedDatabase> {
  const { startSqld } = await import("@pemba/core/testing/node");
  const { LibsqlStore } = await import("@pemba/core");
  const primary = await startSqld();
  await (await LibsqlStore.open(primary.url)).close();
  const replicas = [
    await startSqld({ primaryGrpcUrl: primary.grpcUrl }),
    await startSqld({ primaryGrpcUrl: primary.grpcUrl }),
  ];
  const { createClient } = createRequire(import.meta.resolve("@pemba/core"))("@libsql/client") as {
    createClient(o: { url: string }): {
      execute(sql: string): Promise<{ rows: Record<string, unknown>[] }>;
      close(): void;
    };
  };
  const link = (url: string): ProbeLink => {
    const client = createClient({ url });
    return {
      run: async (sql) => void (await client.execute(sql)),
      newest: async () => Number((await client.execute(NEWEST)).rows[0]!.n),
      close: async () => client.close(),
    };
  };
  return {
    url: primary.url,
    replicaUrls: replicas.map((r) => r.url),
    label: `sqld primary ${primary.url} with two sqld replicas ${replicas.map((r) => r.url).join(", ")}`,
    primaryCpuSeconds: () => treeCpu(primary.pid()!),
    probeLag: () =>
      lagProbe(
        link(primary.url),
        replicas.map((r) => link(r.url)),
      ),
    async stop() {
      for (const r of replicas) await r.stop();
      await primary.stop();
    },
  };
}
