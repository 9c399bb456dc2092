/**
 * SQLite's file stops taking writes under load and takes them again: `pemba serve` (the real CLI) on a SQLite file
 * in an ext4 filesystem of its own (a loop device mounted in a private mount namespace, `unshare -m`, so nothing
 * of it is seen outside the server), with writes and token-less checks throughout, while
 *
 * - the database file becomes read-only: `chattr +i` on it and its WAL (immutable; unlike a mode, that binds root,
 *   and it binds the descriptors already open), then `chattr -i`;
 * - the disk becomes full: a filler file takes every free block, then is removed.
 *
 * A write the database cannot take answers 503 ERROR_CODE_SQL_EXECUTION (gRPC UNAVAILABLE) with "database
 * unavailable: ..." in its details, at once; checks without a snap token go on being answered from the replica;
 * writes are taken again as soon as the file is, without a restart; every acknowledged write is stored and no
 * refused one is. Needs root (mount, chattr), as the engineers' machine and CI run.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type ApiCall,
  allowedChecks,
  isUnavailable,
  readAllTuples,
  reasonOf,
  sleep,
  startLoad,
  tenantApi,
} from "@pemba/core/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliProcess, startServe } from "../src/testing/cli-process.ts";
import { checkBody, tuple, writeSchema } from "./api-client.ts";

let dir: string;
let server: CliProcess & { url: string };
const mnt = () => join(dir, "d");

/** A command in the server's mount namespace (where its filesystem is mounted). */
const inServer = (...command: string[]) =>
  execFileSync("nsenter", ["-t", String(server.child.pid), "-m", ...command], { encoding: "utf8" });

beforeAll(async () => {
  if (process.getuid?.() !== 0)
    throw new Error("this test mounts a filesystem and sets chattr +i: run it as root");
  dir = mkdtempSync(join(tmpdir(), "pemba-sqlite-outage-"));
  // a 32 MB ext4 on a loop device in a tmpfs, no blocks reserved: "full" is full for root too
  const script = [
    "set -e",
    'mount -t tmpfs -o size=40m tmpfs "$DIR"',
    'truncate -s 32m "$DIR/img"',
    'mkfs.ext4 -q -m 0 "$DIR/img"',
    'mkdir "$DIR/d"',
    'mount -o loop "$DIR/img" "$DIR/d"',
    'exec "$@"',
  ].join("\n");
  server = await startServe(["--database", join(dir, "d", "pemba.db")], { DIR: dir }, [
    "unshare",
    "-m",
    "--propagation",
    "private",
    "sh",
    "-c",
    script,
    "sh",
  ]);
}, 60_000);
afterAll(async () => {
  server?.child.kill("SIGTERM");
  await server?.exited;
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

/** A request on tenant t1 of the server, with a 10 s deadline (no answer in time is status 0). */
const call: ApiCall = (path, body) => tenantApi(server.url)(path, body);

/** Every document id with a viewer tuple stored now. */
async function storedIds(): Promise<Set<string>> {
  const tuples = await readAllTuples(call, {
    metadata: { snap_token: "" },
    filter: { entity: { type: "document", ids: [] }, relation: "viewer" },
    page_size: 100,
  });
  return new Set(tuples.map((t) => t.entity.id));
}

describe("SQLite outages under load: a read-only file, a full disk", () => {
  it("writes refused with 503 while the file cannot take them, checks answered, writes taken again without a restart", async () => {
    await writeSchema(server.url);
    const base = await call("data/write", {
      metadata: {},
      tuples: [tuple("document:base", "viewer", "user:base")],
    });
    expect(base.status).toBe(200);

    const acked = new Set<string>();
    const refused = new Map<string, string>();
    // each write carries 50 tuples of ids over 100 characters, so the WAL's free room runs out soon on a full disk
    const pad = "x".repeat(100);
    const reader = allowedChecks(call, checkBody("document:base", "view", "user:base"));
    const load = startLoad([
      {
        kind: "write",
        send: (n) =>
          call("data/write", {
            metadata: {},
            tuples: [
              tuple(`document:w${n}`, "viewer", "user:1"),
              ...Array.from({ length: 49 }, (_, k) =>
                tuple(`document:w${n}-${k}-${pad}`, "owner", `user:${pad}`),
              ),
            ],
          }),
        expected: (r, n) => {
          if (r.status === 200) acked.add(`w${n}`);
          else if (isUnavailable(r) && reasonOf(r).startsWith("database unavailable: "))
            refused.set(`w${n}`, reasonOf(r));
          else return false;
          return true;
        },
        pauseMs: 20,
      },
      reader,
      reader,
    ]);
    const statuses = load.statuses;

    /**
     * Waits until `refused` has grown by `more` (at most `ms`), then 3 s more of the outage (checks go on); the
     * refusals' reasons meanwhile and the checks answered.
     */
    const refusals = async (more: number, ms: number) => {
      const from = refused.size;
      const checksFrom = statuses.get("check 200") ?? 0;
      const until = performance.now() + ms;
      while (refused.size < from + more && performance.now() < until) await sleep(50);
      await sleep(3000);
      return {
        reasons: [...refused.values()].slice(from),
        checks: (statuses.get("check 200") ?? 0) - checksFrom,
      };
    };
    /** Writes acknowledged after the outage ends (waiting at most 30 s for the first one). */
    const recovery = async () => {
      const from = acked.size;
      const until = performance.now() + 30_000;
      while (acked.size === from && performance.now() < until) await sleep(20);
      return acked.size - from;
    };

    await sleep(500);
    const db = join(mnt(), "pemba.db");
    // read-only: neither the file nor its WAL takes a byte
    inServer("chattr", "+i", db, `${db}-wal`);
    const readOnly = await refusals(3, 20_000);
    inServer("chattr", "-i", db, `${db}-wal`);
    const readOnlyRecovery = await recovery();
    await sleep(500);

    // full: a filler takes every free block (dd ends with "No space left on device")
    try {
      inServer("dd", "if=/dev/zero", `of=${join(mnt(), "filler")}`, "bs=1M", "status=none");
    } catch {
      // the disk is full
    }
    // less than a megabyte left (ext4 keeps a few blocks of its own back)
    expect(Number(inServer("df", "-k", "--output=avail", mnt()).trim().split("\n")[1])).toBeLessThan(1024);
    const full = await refusals(3, 30_000);
    inServer("rm", join(mnt(), "filler"));
    const fullRecovery = await recovery();
    await sleep(500);
    await load.stop();

    expect(load.unexpected).toEqual([]);
    expect(readOnly.reasons.length).toBeGreaterThanOrEqual(3);
    for (const reason of readOnly.reasons) expect(reason).toMatch(/^database unavailable: /);
    expect(full.reasons.length).toBeGreaterThanOrEqual(3);
    expect(full.reasons.some((reason) => /database or disk is full/.test(reason))).toBe(true);
    // checks went on being answered during each outage (the reader's failures are in `unexpected`)
    expect(readOnly.checks).toBeGreaterThan(10);
    expect(full.checks).toBeGreaterThan(10);
    // writes are taken again without a restart
    expect(readOnlyRecovery).toBeGreaterThan(0);
    expect(fullRecovery).toBeGreaterThan(0);
    // every acknowledged write is stored, no refused one is
    const stored = await storedIds();
    for (const id of acked) expect(stored.has(id), `acknowledged ${id} is stored`).toBe(true);
    for (const id of refused.keys()) expect(stored.has(id), `refused ${id} is not stored`).toBe(false);
    console.log(
      `sqlite outages: ${JSON.stringify(Object.fromEntries(statuses))}; read-only: ${readOnly.checks} checks answered, refusals ${[...new Set(readOnly.reasons)].join(" | ")}; full disk: ${full.checks} checks answered, refusals ${[...new Set(full.reasons)].join(" | ")}; writes again after ${readOnlyRecovery.toFixed(2)} s (read-only) and ${fullRecovery.toFixed(2)} s (full disk)`,
    );
  }, 120_000);
});
