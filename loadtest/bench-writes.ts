/**
 * Write throughput through `pemba serve`: N concurrent writers, each sending its next data write as soon
 * as the last one answered, for a fixed time per case. Prints writes/s, rows/s and the latency p50/p99 per case.
 *
 *   node loadtest/bench-writes.ts [--repo DIR] [--databases pg,sqlite] [--writers 1,8,32,64]
 *     [--tenancy shared,per-writer] [--rows 1,1000] [--seconds 4] [--warmup 2] [--seed-rows 2000] [--fresh]
 *     [--cpu-prof-dir DIR] [--client raw|http|fetch]
 *
 * Cases: writers x tenancy (`shared`: every writer writes tenant w0; `per-writer`: writer i writes its own tenant
 * wi) x rows per write, on a throwaway PostgreSQL server (fsync=off) and a temp SQLite file. `--repo` runs the CLI
 * of another checkout (e.g. a worktree of the base commit, for before/after in one session); its bundle is built
 * there first. `--cpu-prof-dir` writes the server's V8 CPU profile there (loadtest/profile-summary.ts reads it).
 *
 * `--fresh`: each case on a database of its own (a new PostgreSQL server or SQLite file, and a new server), seeded
 * with only the tenants it writes; without it every case runs on one database, which the earlier cases have grown
 * (a later case then also measures their rows and PostgreSQL's autovacuum of them).
 *
 * Steady state, as pgbench measures it: before the cases every tenant gets `--seed-rows` tuples (1,000-row writes)
 * and PostgreSQL's statistics are gathered (`ANALYZE` through psql, as `pgbench -i` ends with VACUUM ANALYZE); each
 * case then runs unmeasured for `--warmup` seconds before its measured seconds, so the server's JIT has compiled
 * the write path and the measured writes run on plans made for tables of their size. Without them a case on a fresh
 * database measured the server's compilation (about half the server's CPU of a first 5-second case) and prepared
 * statements whose generic plans were made while the tables were nearly empty (a feed read planned as a scan of the
 * tenant's rows, 0.1 ms at first and 0.6 ms after 25,000 writes, until autovacuum's first ANALYZE a minute later).
 *
 * CPU per write, by process, from /proc: the load generator (this process), the server, and PostgreSQL (postmaster
 * and backends); `cores` is their sum per second of the case (2 = both cores of a 2-core machine busy).
 *
 * `--client raw` (default, from 2026-11-27 16:45 UTC): one kept-alive socket per writer speaking just enough
 * HTTP/1.1 (RawConnection), about 0.05 ms of the generator's CPU per write. `--client http`: node:http with a
 * keep-alive Agent, about 0.15 ms (the figures from 13:30 to 16:45 UTC); `--client fetch`: undici's fetch, about
 * 0.3 ms (the figures before 13:30 UTC). On 2 cores the generator's CPU is taken from the server and PostgreSQL,
 * so compare only runs with the same client.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { Agent, request } from "node:http";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { startDatabase } from "./lib/database.ts";
import { cpuSeconds, postgresCpu, postgresCpuBetween } from "./lib/proc.ts";
import { REPO_DIR, startPemba } from "./lib/servers.ts";

const { values } = parseArgs({
  options: {
    repo: { type: "string" },
    databases: { type: "string", default: "pg,sqlite" },
    writers: { type: "string", default: "1,8,32,64" },
    tenancy: { type: "string", default: "shared,per-writer" },
    rows: { type: "string", default: "1,1000" },
    seconds: { type: "string", default: "4" },
    warmup: { type: "string", default: "2" },
    "seed-rows": { type: "string", default: "2000" },
    fresh: { type: "boolean", default: false },
    "cpu-prof-dir": { type: "string" },
    client: { type: "string", default: "raw" },
  },
});
const repo = resolve(values.repo ?? REPO_DIR);
const numbers = (s: string) => s.split(",").map(Number);
const WRITERS = numbers(values.writers);
const ROWS = numbers(values.rows);
const TENANCY = values.tenancy.split(",") as ("shared" | "per-writer")[];
const SECONDS = Number(values.seconds);
const WARMUP = Number(values.warmup);
const SEED_ROWS = Number(values["seed-rows"]);
const SCHEMA = "entity user {}\nentity doc {\n  relation viewer @user\n  permission view = viewer\n}";

const agent = new Agent({ keepAlive: true, maxSockets: 256 });

/** POST with node:http on kept-alive sockets; rejects unless 2xx. */
function postHttp(url: string, body: unknown): Promise<void> {
  const payload = JSON.stringify(body);
  return new Promise((done, fail) => {
    const req = request(
      url,
      {
        method: "POST",
        agent,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(payload) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) done();
          else fail(new Error(`${url}: ${status} ${Buffer.concat(chunks).toString().slice(0, 200)}`));
        });
        res.on("error", fail);
      },
    );
    req.on("error", fail);
    req.end(payload);
  });
}

/**
 * One kept-alive socket speaking just enough HTTP/1.1 for a POST and its answer (status line, Content-Length or
 * chunked body), as wrk does: a few microseconds of the load generator's CPU per request, where node:http's client
 * takes about 0.1 ms. On a 2-core machine the generator's CPU is taken from the server and PostgreSQL.
 */
class RawConnection {
  readonly #socket: Socket;
  #buffer: Buffer = Buffer.alloc(0);
  #waiting: { done: () => void; fail: (e: Error) => void; url: string } | undefined;

  /** The server closed the socket (its keep-alive timeout ends idle connections between cases): not reused. */
  closed = false;

  constructor(host: string, port: number) {
    this.#socket = connect({ host, port, noDelay: true });
    this.#socket.on("data", (chunk: Buffer) => this.#read(chunk));
    this.#socket.on("error", (e) => this.#end(e));
    this.#socket.on("close", () => this.#end(new Error("the server closed the connection")));
  }

  #end(error: Error): void {
    this.closed = true;
    const waiting = this.#waiting;
    this.#waiting = undefined;
    waiting?.fail(error);
  }

  post(url: URL, payload: string): Promise<void> {
    return new Promise((done, fail) => {
      this.#waiting = { done, fail, url: url.href };
      this.#socket.write(
        `POST ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`,
      );
    });
  }

  #read(chunk: Buffer): void {
    this.#buffer = this.#buffer.length === 0 ? chunk : Buffer.concat([this.#buffer, chunk]);
    const end = this.#buffer.indexOf("\r\n\r\n");
    if (end < 0) return;
    const head = this.#buffer.subarray(0, end).toString("latin1");
    const length = /\r\ncontent-length: *(\d+)/i.exec(head);
    const bodyStart = end + 4;
    let total: number;
    if (length) total = bodyStart + Number(length[1]);
    else {
      const last = this.#buffer.indexOf("\r\n0\r\n\r\n", bodyStart - 2);
      if (last < 0) return;
      total = last + 7;
    }
    if (this.#buffer.length < total) return;
    const status = Number(head.slice(9, 12));
    const body = this.#buffer.subarray(bodyStart, total).toString();
    this.#buffer = this.#buffer.subarray(total);
    const waiting = this.#waiting!;
    this.#waiting = undefined;
    if (status >= 200 && status < 300) waiting.done();
    else waiting.fail(new Error(`${waiting.url}: ${status} ${body.slice(0, 200)}`));
  }

  close(): void {
    this.#socket.destroy();
  }
}

const idle: RawConnection[] = [];
const opened: RawConnection[] = [];

/**
 * Closes every raw connection: each case opens its own (in its warm-up), so none sits idle past the server's
 * keep-alive timeout, whose close could cross a request sent on it (ECONNRESET).
 */
function closeConnections(): void {
  for (const connection of opened.splice(0)) connection.close();
  idle.length = 0;
}

/** POST on an idle raw connection (one is opened when none is idle); rejects unless 2xx. */
async function postRaw(href: string, body: unknown): Promise<void> {
  const url = new URL(href);
  let connection = idle.pop();
  while (connection?.closed) connection = idle.pop();
  if (connection === undefined) {
    connection = new RawConnection(url.hostname, Number(url.port));
    opened.push(connection);
  }
  try {
    await connection.post(url, JSON.stringify(body));
  } catch (e) {
    // the server closed the connection without answering (seen once in 64 writers x 1,000-row SQLite writes,
    // waits of 5 s): sent again once on a new connection
    if (!connection.closed) throw e;
    connection = new RawConnection(url.hostname, Number(url.port));
    opened.push(connection);
    await connection.post(url, JSON.stringify(body));
  }
  idle.push(connection);
}

async function postFetch(url: string, body: unknown): Promise<void> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${url}: ${response.status} ${text.slice(0, 200)}`);
}

const CLIENTS = { raw: postRaw, http: postHttp, fetch: postFetch };
const post = CLIENTS[values.client as keyof typeof CLIENTS];
if (post === undefined) throw new Error("--client: raw, http or fetch");

const quantile = (sorted: number[], q: number) =>
  sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

interface CpuSample {
  generator: number;
  server: number;
  postgres: Map<number, number>;
}

let batch = 0;
/** One case: `writers` loops for SECONDS; each write is `rows` new tuples of the writer's tenant. */
async function runCase(
  url: string,
  cpu: () => CpuSample,
  writers: number,
  tenancy: "shared" | "per-writer",
  rows: number,
) {
  closeConnections();
  let latencies: number[] = [];
  let deadline = performance.now() + WARMUP * 1000;
  const run = batch++;
  const writer = async (w: number, at = run) => {
    const tenant = tenancy === "shared" ? "w0" : `w${w}`;
    for (let i = 0; performance.now() < deadline; i++) {
      const tuples = Array.from({ length: rows }, (_, r) => ({
        entity: { type: "doc", id: `${at}-${w}-${i}` },
        relation: "viewer",
        subject: { type: "user", id: String(r) },
      }));
      const started = performance.now();
      await post(`${url}/v1/tenants/${tenant}/data/write`, { metadata: { schema_version: "" }, tuples });
      latencies.push(performance.now() - started);
    }
  };
  // warm-up: the same writes, unmeasured (ids of another batch)
  await Promise.all(Array.from({ length: writers }, (_, w) => writer(w)));
  latencies = [];
  deadline = performance.now() + SECONDS * 1000;
  const measured = batch++;
  const started = performance.now();
  const before = cpu();
  await Promise.all(Array.from({ length: writers }, (_, w) => writer(w, measured)));
  const after = cpu();
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const perWrite = (s: number) => (s * 1000) / latencies.length;
  const pg = postgresCpuBetween(before.postgres, after.postgres);
  return {
    cpuMsPerWrite: {
      generator: perWrite(after.generator - before.generator),
      server: perWrite(after.server - before.server),
      postgres: perWrite(pg),
    },
    cores: (after.generator - before.generator + after.server - before.server + pg) / seconds,
    writesPerSecond: latencies.length / seconds,
    rowsPerSecond: (latencies.length * rows) / seconds,
    p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
  };
}

/** `ANALYZE` of the whole database through psql (PostgreSQL's statistics for the seeded tables). */
function analyze(url: string): void {
  const bin = process.env.PEMBA_PG_BIN ?? "/usr/lib/postgresql/15/bin";
  execFileSync(join(bin, "psql"), [url, "-q", "-c", "ANALYZE"], { stdio: "inherit" });
}

console.log(
  `repo ${repo} (${SECONDS} s per case after ${WARMUP} s unmeasured; ${SEED_ROWS} rows seeded per tenant; client ${values.client})`,
);
console.log(
  "database  writers  tenancy     rows/write  writes/s    rows/s   p50 ms   p99 ms  cpu ms/write: gen  server      pg  cores",
);
/** A database, a server on it, its tenants (w0..) seeded and analyzed, and the CPU sampler of the three. */
interface Setup {
  url: string;
  cpu: () => CpuSample;
  stop(): Promise<void>;
}

async function setUp(name: string, tenants: number, dir: string): Promise<Setup> {
  const db = await startDatabase(name === "pg", mkdtempSync(join(dir, "case-")));
  const profileDir = values["cpu-prof-dir"];
  const nodeFlags = profileDir ? ["--cpu-prof", `--cpu-prof-dir=${resolve(profileDir)}`] : [];
  const server = await startPemba(db.url, ["--log-level", "warn"], nodeFlags, repo);
  const stop = async () => {
    await server.stop();
    await db.stop();
  };
  const pgPort = name === "pg" ? Number(new URL(db.url).port) : undefined;
  try {
    for (let w = 0; w < tenants; w++) {
      await post(`${server.url}/v1/tenants/create`, { id: `w${w}`, name: `writer ${w}` });
      await post(`${server.url}/v1/tenants/w${w}/schemas/write`, { schema: SCHEMA });
      for (let done = 0; done < SEED_ROWS; done += 1000) {
        const tuples = Array.from({ length: Math.min(1000, SEED_ROWS - done) }, (_, r) => ({
          entity: { type: "doc", id: `seed-${done + r}` },
          relation: "viewer",
          subject: { type: "user", id: String(r % 100) },
        }));
        await post(`${server.url}/v1/tenants/w${w}/data/write`, { metadata: { schema_version: "" }, tuples });
      }
    }
    if (pgPort !== undefined) analyze(db.url);
  } catch (e) {
    await stop();
    throw e;
  }
  return {
    url: server.url,
    cpu: () => {
      const own = process.cpuUsage();
      return {
        generator: (own.user + own.system) / 1e6,
        server: cpuSeconds(server.pid),
        postgres: pgPort === undefined ? new Map() : postgresCpu(pgPort),
      };
    },
    stop,
  };
}

const dir = mkdtempSync(join(tmpdir(), "pemba-bench-writes-"));
try {
  for (const name of values.databases.split(",")) {
    // one database for every case, or (--fresh) one per case with only the tenants the case writes
    const shared = values.fresh ? undefined : await setUp(name, Math.max(...WRITERS), dir);
    try {
      for (const rows of ROWS) {
        for (const tenancy of TENANCY) {
          for (const writers of WRITERS) {
            const setup = shared ?? (await setUp(name, tenancy === "shared" ? 1 : writers, dir));
            try {
              const r = await runCase(setup.url, setup.cpu, writers, tenancy, rows);
              console.log(
                `${name.padEnd(8)}  ${String(writers).padStart(7)}  ${tenancy.padEnd(10)}  ${String(rows).padStart(10)}  ${r.writesPerSecond.toFixed(0).padStart(8)}  ${r.rowsPerSecond.toFixed(0).padStart(8)}  ${r.p50.toFixed(1).padStart(7)}  ${r.p99.toFixed(1).padStart(7)}  ${r.cpuMsPerWrite.generator.toFixed(3).padStart(17)}  ${r.cpuMsPerWrite.server.toFixed(3).padStart(6)}  ${r.cpuMsPerWrite.postgres.toFixed(3).padStart(6)}  ${r.cores.toFixed(2).padStart(5)}`,
              );
            } finally {
              if (shared === undefined) await setup.stop();
            }
          }
        }
      }
    } finally {
      await shared?.stop();
    }
  }
} finally {
  agent.destroy();
  closeConnections();
  rmSync(dir, { recursive: true, force: true });
}
