/**
 * The targets of `pnpm loadtest`: `pemba serve` on a temp SQLite file or a throwaway PostgreSQL server, or the
 * Worker in workerd through `wrangler dev` (local mode, offline) with the store wrangler.toml configures. Each is
 * started on 127.0.0.1 with authentication on, and stopped with everything it started.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "@pemba/core/testing/node";
import { REPO_DIR, runWrangler, startWranglerDev } from "@pemba/worker/testing";
import { startDatabase, type TestDatabase } from "./database.ts";
import { descendants } from "./proc.ts";
import {
  type ReplicatedDatabase,
  startLibsqlReplicated,
  startPostgresAlone,
  startPostgresReplicas,
} from "./replicated.ts";
import { startPemba } from "./servers.ts";

export const TARGETS = [
  "node-sqlite",
  "node-postgres",
  "node-postgres-replicas",
  "node-libsql-replicated",
  "worker",
] as const;
export type TargetName = (typeof TARGETS)[number];

/** How clients authenticate: a preshared key, or OIDC access tokens checked against a JWKS. */
export type TargetAuth =
  | { kind: "key"; key: string }
  | { kind: "jwks"; jwksUrl: string; issuer: string; audience: string };

export interface Target {
  name: TargetName;
  url: string;
  /** The process that answers requests (`pemba serve`'s node, or the workerd running the Worker), for CPU, RSS,
   * pinning. */
  serverPid: number;
  /** The Worker: wrangler dev's entry workerd in front of it (local dev only). */
  entryPid?: number;
  /** The Worker: the V8 inspector port of its isolate (wrangler dev --inspector-port). */
  inspectorPort?: number;
  /**
   * The PostgreSQL or libSQL databases the server uses, measured from outside (the primary's CPU, the replication
   * lag); undefined for SQLite and the Worker.
   */
  database?: ReplicatedDatabase;
  /** What runs, for the report (database kind, store). */
  description: string;
  /** Seconds from starting the server process (`wrangler dev`, `pemba serve`) to its first answer. */
  readySeconds: number;
  /** `pemba serve`'s gRPC port as host:port, when started with `grpc`. */
  grpcAddress?: string;
  /** The Prometheus text of GET /metrics (with auth on it needs a token); undefined for the Worker (none). */
  metrics(token: string): Promise<string | undefined>;
  stop(): Promise<void>;
}

export interface TargetOptions {
  auth: TargetAuth;
  /**
   * PEMBA_LOG_LEVEL (`--log-level`) of the server; default warn: a line for failed requests only, none per check
   * (Node and the Worker alike).
   */
  logLevel?: string;
  /** Extra flags for the server's node (e.g. --cpu-prof); node targets only. */
  nodeFlags?: string[];
  /** Open the gRPC port too (`--grpc-port`); node targets only. */
  grpc?: boolean;
}

export function parseTarget(name: string): TargetName {
  const found = TARGETS.find((t) => t === name);
  if (found === undefined) throw new Error(`unknown target "${name}": one of ${TARGETS.join(", ")}`);
  return found;
}

export async function startTarget(name: TargetName, options: TargetOptions): Promise<Target> {
  if (name === "worker") return startWorker(options);
  if (name === "node-sqlite") return startNode(name, options);
  return startReplicatedNode(name, options);
}

function authArgs(auth: TargetAuth): string[] {
  return auth.kind === "key"
    ? ["--auth-keys", auth.key]
    : ["--jwks-url", auth.jwksUrl, "--issuer", auth.issuer, "--audience", auth.audience];
}

/**
 * `pemba serve` on PostgreSQL (alone, or with a streaming replica named by --database-read-replicas) or on a sqld
 * primary with two sqld replicas: the database measured from outside (Target.database).
 */
async function startReplicatedNode(name: TargetName, options: TargetOptions): Promise<Target> {
  const database =
    name === "node-postgres"
      ? await startPostgresAlone()
      : name === "node-postgres-replicas"
        ? await startPostgresReplicas()
        : await startLibsqlReplicated();
  try {
    const replicas =
      database.replicaUrls.length === 0 ? [] : ["--database-read-replicas", database.replicaUrls.join(",")];
    const target = await startNode(name, options, { ...database, stop: async () => {} }, replicas);
    return {
      ...target,
      database,
      async stop() {
        await target.stop();
        await database.stop();
      },
    };
  } catch (e) {
    await database.stop();
    throw e;
  }
}

async function startNode(
  name: TargetName,
  options: TargetOptions,
  given?: TestDatabase,
  databaseArgs: string[] = [],
): Promise<Target> {
  const dir = mkdtempSync(join(tmpdir(), "pemba-loadtest-"));
  const database = given ?? (await startDatabase(false, dir));
  try {
    const grpcPort = options.grpc ? await freePort() : undefined;
    const started = performance.now();
    const server = await startPemba(
      database.url,
      [
        "--log-level",
        options.logLevel ?? "warn",
        ...authArgs(options.auth),
        ...databaseArgs,
        ...(grpcPort === undefined ? [] : ["--grpc-port", String(grpcPort)]),
      ],
      options.nodeFlags ?? [],
    );
    const readySeconds = (performance.now() - started) / 1000;
    return {
      name,
      url: server.url,
      serverPid: server.pid,
      grpcAddress: grpcPort === undefined ? undefined : `127.0.0.1:${grpcPort}`,
      readySeconds,
      description: `pemba serve (Node ${process.version}) on ${database.label}`,
      async metrics(token) {
        const response = await fetch(`${server.url}/metrics`, {
          headers: { authorization: `Bearer ${token}` },
        });
        const text = await response.text();
        if (!response.ok) throw new Error(`GET /metrics: ${response.status} ${text.slice(0, 300)}`);
        return text;
      },
      async stop() {
        await server.stop();
        await database.stop();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (e) {
    await database.stop();
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
}

export interface WorkerdProcesses {
  /** The workerd running the Worker itself (its isolate, and local D1). */
  worker: number;
  /** wrangler dev's entry workerd, listening on the dev port and forwarding to the Worker (local dev only). */
  entry: number;
}

/** The two workerd processes `wrangler dev` (pid `wranglerPid`, serving `url`) runs. */
export function workerdProcesses(wranglerPid: number, url: string): WorkerdProcesses {
  const listen = `entry=127.0.0.1:${new URL(url).port}`;
  let worker: number | undefined;
  let entry: number | undefined;
  for (const p of descendants(wranglerPid)) {
    if (p.comm !== "workerd") continue;
    const args = readFileSync(`/proc/${p.pid}/cmdline`, "utf8").split("\0");
    if (args.some((a) => a.endsWith(listen))) entry = p.pid;
    else worker = p.pid;
  }
  if (worker === undefined || entry === undefined) {
    throw new Error(`wrangler dev (pid ${wranglerPid}) is up but its two workerd processes were not found`);
  }
  return { worker, entry };
}

/** wrangler.toml's store: its [vars] PEMBA_DATABASE ("d1:DB", "memory:", a libSQL URL). */
function workerDatabase(): string {
  const toml = readFileSync(join(REPO_DIR, "wrangler.toml"), "utf8");
  return /^PEMBA_DATABASE\s*=\s*"([^"]*)"/m.exec(toml)?.[1] ?? "memory:";
}

async function startWorker(options: TargetOptions): Promise<Target> {
  const vars: Record<string, string> = {
    // the replica's settings, as a Node target takes them from the environment (PEMBA_REPLICA, PEMBA_REPLICA_MEMORY, ...)
    ...Object.fromEntries(
      Object.entries(process.env).filter(
        (entry): entry is [string, string] => entry[0].startsWith("PEMBA_REPLICA") && entry[1] !== undefined,
      ),
    ),
    PEMBA_LOG_LEVEL: options.logLevel ?? "warn",
    ...(options.auth.kind === "key"
      ? { PEMBA_AUTH_KEYS: options.auth.key }
      : {
          PEMBA_JWKS_URL: options.auth.jwksUrl,
          PEMBA_ISSUER: options.auth.issuer,
          PEMBA_AUDIENCE: options.auth.audience,
        }),
  };
  const database = workerDatabase();
  const state = mkdtempSync(join(tmpdir(), "pemba-loadtest-worker-"));
  let store = `wrangler.toml's store (${database})`;
  try {
    if (database.startsWith("d1:")) {
      // a fresh local D1 database (miniflare's SQLite under `state`), migrated as a deploy would
      await runWrangler(["d1", "migrations", "apply", "pemba", "--local", "--persist-to", state]);
      store = `local D1 (${database}, migrated with wrangler d1 migrations apply --local)`;
    }
    const started = performance.now();
    const dev = await startWranglerDev(vars, 90_000, state);
    const readySeconds = (performance.now() - started) / 1000;
    let workerd: WorkerdProcesses;
    try {
      workerd = workerdProcesses(dev.child.pid!, dev.url);
    } catch (e) {
      await dev.close();
      throw e;
    }
    return {
      name: "worker",
      url: dev.url,
      serverPid: workerd.worker,
      entryPid: workerd.entry,
      inspectorPort: dev.inspectorPort,
      readySeconds,
      description: `the Worker (packages/worker) in workerd via \`wrangler dev\` (local mode) on ${store}`,
      metrics: async () => undefined,
      async stop() {
        await dev.close();
        rmSync(state, { recursive: true, force: true });
      },
    };
  } catch (e) {
    rmSync(state, { recursive: true, force: true });
    throw e;
  }
}
