/**
 * A real libSQL server (sqld) for tests: a primary, or a replica of one, on 127.0.0.1, with its data in a temp dir.
 *
 * The binary: $PEMBA_SQLD, else `../shared/tools/sqld/sqld` next to the repository (CI has it). Without one, the
 * tests that need it fail with "real sqld NOT verified" (describeWithSqld), or, with PEMBA_SQLD=none, are reported
 * as skipped under that name; they never pass silently. A user builds sqld with
 * `cargo install --git https://github.com/tursodatabase/libsql libsql-server`.
 *
 * Token auth: sqld checks Ed25519-signed JWTs (`--auth-jwt-key-file`, the public key in SPKI PEM; several keys may be
 * concatenated in the file, any of them verifies). sqldKey() makes such a key and signs tokens with it (jose).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, openSync, rmSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer, request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createClient } from "@libsql/client";
import { exportSPKI, generateKeyPair, SignJWT } from "jose";
import { describe, it } from "vitest";
import { freePort } from "./free-port.ts";

const REPO_DIR = resolve(import.meta.dirname, "../../../../..");

/** The sqld binary to run, or why there is none. */
export function findSqld(): { path: string } | { missing: string } {
  const env = process.env.PEMBA_SQLD;
  if (env && env !== "none") {
    return existsSync(env) ? { path: env } : { missing: `PEMBA_SQLD=${env} does not exist` };
  }
  const shared = resolve(REPO_DIR, "../shared/tools/sqld/sqld");
  if (env !== "none" && existsSync(shared)) return { path: shared };
  return {
    missing:
      env === "none"
        ? "PEMBA_SQLD=none"
        : `no sqld binary: set PEMBA_SQLD, or build it at ${shared} (cargo install --git https://github.com/tursodatabase/libsql libsql-server)`,
  };
}

/**
 * describe() for tests that run a real sqld. Without a binary the block holds one failing test named
 * "real sqld NOT verified" (PEMBA_SQLD=none: the same test, reported as skipped).
 */
export function describeWithSqld(name: string, body: () => void): void {
  const found = findSqld();
  if ("path" in found) {
    describe(name, body);
    return;
  }
  describe(name, () => {
    const title = `real sqld NOT verified: ${found.missing}`;
    if (process.env.PEMBA_SQLD === "none") it.skip(title, () => {});
    else
      it(title, () => {
        throw new Error(title);
      });
  });
}

export interface SqldKey {
  /** The Ed25519 public key in SPKI PEM, as sqld's --auth-jwt-key-file takes it. */
  publicPem: string;
  /** A JWT signed with the key (EdDSA). sqld grants full access to a token without an `a` claim. */
  token(claims?: Record<string, unknown>): Promise<string>;
}

export async function sqldKey(): Promise<SqldKey> {
  const { publicKey, privateKey } = await generateKeyPair("EdDSA", { crv: "Ed25519" });
  return {
    publicPem: await exportSPKI(publicKey),
    token: (claims = {}) => new SignJWT(claims).setProtectedHeader({ alg: "EdDSA" }).sign(privateKey),
  };
}

export interface SqldOptions {
  /** Require a JWT signed by one of these keys (none: no auth). */
  keys?: SqldKey[];
  /** Run as a replica of this primary (its grpcUrl). */
  primaryGrpcUrl?: string;
}

export interface SqldServer {
  /** http://127.0.0.1:<port>, Hrana over HTTP */
  url: string;
  /** http://127.0.0.1:<port> where replicas connect (a primary only) */
  grpcUrl?: string;
  /** The server process's id while it runs (for measuring its CPU from the outside). */
  pid(): number | undefined;
  /** Runs one statement on the server (with this token when it checks them); the rows as plain objects. */
  query(sql: string, authToken?: string): Promise<Record<string, unknown>[]>;
  /** Stops the server (SIGTERM), the data kept. */
  kill(): Promise<void>;
  /** Starts it again on the same ports and data, optionally with other auth keys. */
  restart(opts?: { keys?: SqldKey[] }): Promise<void>;
  /** Stops the server and removes its data. */
  stop(): Promise<void>;
}

async function waitHealthy(url: string, child: ChildProcess, log: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (child.exitCode !== null) throw new Error(`sqld exited with ${child.exitCode}; see ${log}`);
    try {
      if ((await fetch(`${url}/health`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((done) => setTimeout(done, 25));
  }
  throw new Error(`sqld at ${url} did not answer /health in 10 s; see ${log}`);
}

export async function startSqld(opts: SqldOptions = {}): Promise<SqldServer> {
  const found = findSqld();
  if (!("path" in found)) throw new Error(`real sqld NOT verified: ${found.missing}`);
  const dir = mkdtempSync(join(tmpdir(), "pemba-sqld-"));
  const httpPort = await freePort();
  const grpcPort = opts.primaryGrpcUrl ? undefined : await freePort();
  const url = `http://127.0.0.1:${httpPort}`;
  const log = join(dir, "sqld.log");
  let keys = opts.keys ?? [];
  let child: ChildProcess | undefined;

  const start = async () => {
    const args = [
      "--db-path",
      join(dir, "data.sqld"),
      "--http-listen-addr",
      `127.0.0.1:${httpPort}`,
      "--no-welcome",
    ];
    if (grpcPort) args.push("--grpc-listen-addr", `127.0.0.1:${grpcPort}`);
    if (opts.primaryGrpcUrl) args.push("--primary-grpc-url", opts.primaryGrpcUrl);
    if (keys.length) {
      const file = join(dir, "jwt-keys.pem");
      writeFileSync(file, keys.map((k) => k.publicPem).join(""));
      args.push("--auth-jwt-key-file", file);
    }
    const out = openSync(log, "a");
    child = spawn(found.path, args, { stdio: ["ignore", out, out] });
    await waitHealthy(url, child, log);
  };
  const kill = async () => {
    const c = child;
    child = undefined;
    if (!c || c.exitCode !== null) return;
    const exited = new Promise((done) => c.once("exit", done));
    c.kill("SIGTERM");
    await exited;
  };
  await start();
  return {
    url,
    grpcUrl: grpcPort ? `http://127.0.0.1:${grpcPort}` : undefined,
    pid: () => child?.pid,
    async query(sql, authToken) {
      const client = createClient({ url, authToken });
      try {
        return (await client.execute(sql)).rows.map((r) => ({ ...r }));
      } finally {
        client.close();
      }
    },
    kill,
    async restart(next = {}) {
      await kill();
      if (next.keys) keys = next.keys;
      await start();
    },
    async stop() {
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface RecordingProxy {
  url: string;
  /** Every request line forwarded, e.g. "POST /v2/pipeline", in order. */
  requests(): string[];
  close(): Promise<void>;
}

/**
 * An HTTP forwarder in front of a real server that records each request line, so a test can see which endpoints a
 * client used and that it used none yet. Bodies and answers pass through unchanged.
 */
export function recordRequests(target: string): Promise<RecordingProxy> {
  const to = new URL(target);
  const seen: string[] = [];
  const server = createHttpServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    const upstream = httpRequest(
      { host: to.hostname, port: to.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on("error", () => {
      res.writeHead(502).end();
    });
    req.pipe(upstream);
  });
  return new Promise((done) => {
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      done({
        url: `http://127.0.0.1:${port}`,
        requests: () => [...seen],
        close: () =>
          new Promise((closed) => {
            server.closeAllConnections();
            server.close(() => closed());
          }),
      });
    });
  });
}
