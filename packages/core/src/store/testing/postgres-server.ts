/**
 * A throwaway PostgreSQL server for tests: initdb into a temp dir, start on a free port (unix socket in the same
 * dir), stop with `pg_ctl stop -m immediate`. initdb refuses to run as root, so as root the data dir is handed to
 * the `postgres` OS user and the tools run through `su`. Binaries: $PEMBA_PG_BIN or /usr/lib/postgresql/15/bin.
 * $PEMBA_PG_EXTRA: more server options, for diagnosing a benchmark's statements, e.g.
 * `-c shared_preload_libraries=pg_stat_statements,auto_explain -c auto_explain.log_min_duration=20`.
 */
import { execFile } from "node:child_process";
import { chownSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { freePort } from "./free-port.ts";

const run = promisify(execFile);

export interface PostgresServer {
  /** postgres://postgres@127.0.0.1:<port>/postgres */
  url: string;
  /** Stops the server and removes its data. */
  stop(): Promise<void>;
  /** An outage: `pg_ctl stop -m immediate` (no shutdown checkpoint, connections cut), the data kept. */
  kill(): Promise<void>;
  /** Starts the server again on the same port and data after `kill` (crash recovery runs first). */
  restart(): Promise<void>;
  /**
   * A streaming replica of this server (a hot standby): `pg_basebackup -R` of the running server into another temp
   * dir, started on its own port. It replays the primary's WAL (pg_last_wal_replay_lsn()) and answers reads only.
   */
  startReplica(): Promise<PostgresServer>;
}

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

async function asServerUser(asRoot: boolean, bin: string, args: string[]): Promise<void> {
  if (asRoot) {
    const cmd = [bin, ...args].map(quote).join(" ");
    await run("su", ["-s", "/bin/sh", "postgres", "-c", cmd]);
  } else {
    await run(bin, args);
  }
}

export async function startPostgres(): Promise<PostgresServer> {
  const binDir = process.env.PEMBA_PG_BIN ?? "/usr/lib/postgresql/15/bin";
  const asRoot = process.getuid?.() === 0;
  const dir = await ownedTempDir(asRoot);
  const data = join(dir, "data");
  await asServerUser(asRoot, join(binDir, "initdb"), [
    "-A",
    "trust",
    "-U",
    "postgres",
    "-E",
    "UTF8",
    "-D",
    data,
  ]);
  return serve(binDir, asRoot, dir, data);
}

async function ownedTempDir(asRoot: boolean): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "pemba-pg-"));
  if (asRoot) {
    const { stdout } = await run("id", ["-u", "postgres"]);
    const { stdout: gid } = await run("id", ["-g", "postgres"]);
    chownSync(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  return dir;
}

async function serve(binDir: string, asRoot: boolean, dir: string, data: string): Promise<PostgresServer> {
  const ctl = join(binDir, "pg_ctl");
  const port = await freePort();
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off ${process.env.PEMBA_PG_EXTRA ?? ""}`;
  const start = () =>
    asServerUser(asRoot, ctl, ["start", "-w", "-D", data, "-l", join(dir, "server.log"), "-o", options]);
  await start();
  let stopped = false;
  let running = true;
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    async stop() {
      if (stopped) return;
      stopped = true;
      try {
        if (running) await asServerUser(asRoot, ctl, ["stop", "-D", data, "-m", "immediate"]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
    async kill() {
      await asServerUser(asRoot, ctl, ["stop", "-D", data, "-m", "immediate"]);
      running = false;
    },
    async restart() {
      await start();
      running = true;
    },
    async startReplica() {
      const replicaDir = await ownedTempDir(asRoot);
      const replicaData = join(replicaDir, "data");
      await asServerUser(asRoot, join(binDir, "pg_basebackup"), [
        "-h",
        "127.0.0.1",
        "-p",
        String(port),
        "-U",
        "postgres",
        "-D",
        replicaData,
        "-R",
        "-X",
        "stream",
      ]);
      return serve(binDir, asRoot, replicaDir, replicaData);
    },
  };
}
