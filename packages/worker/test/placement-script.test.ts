/**
 * scripts/placement.ts, the README's "Adding a database" step: run as the operator runs it (node, ids on stdin),
 * it prints the PEMBA_D1_TENANTS entries that keep every tenant the new binding list would move where it is.
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { rendezvous } from "@pemba/core";
import { describe, expect, it } from "vitest";

const script = fileURLToPath(new URL("../scripts/placement.ts", import.meta.url));
const run = (args: string[], input: string) =>
  spawnSync(process.execPath, ["--experimental-strip-types", "--no-warnings", script, ...args], {
    input,
    encoding: "utf8",
  });

describe("scripts/placement.ts", () => {
  const ids = Array.from({ length: 200 }, (_, i) => `tenant-${i}`);

  it("adding DB3 to DB,DB2: pins exactly the tenants whose hash moves to DB3, where they are now", () => {
    const out = run(["--from", "DB,DB2", "--to", "DB,DB2,DB3"], `${ids.join("\n")}\n`);
    expect(out.status).toBe(0);
    const moving = ids.filter((id) => rendezvous(["DB", "DB2", "DB3"], id) === "DB3");
    expect(moving.length).toBeGreaterThan(40);
    expect(out.stdout.trim()).toBe(moving.map((id) => `${id}=${rendezvous(["DB", "DB2"], id)}`).join(","));
    expect(out.stderr.trim().split("\n")).toEqual(
      moving.map((id) => `${id}: ${rendezvous(["DB", "DB2"], id)} -> DB3`),
    );
  });

  it("reads wrangler's --json answer, keeps the pins given, and a pinned tenant never moves", () => {
    const pinned = ids.find((id) => rendezvous(["DB", "DB2"], id) === "DB")!;
    const json = JSON.stringify([{ results: ids.map((id) => ({ id })), success: true }]);
    const out = run(["--from", "DB", "--to", "DB,DB2", "--pins", `${pinned}=DB`], json);
    expect(out.status).toBe(0);
    const moving = ids.filter((id) => id !== pinned && rendezvous(["DB", "DB2"], id) === "DB2");
    expect(out.stdout.trim()).toBe([`${pinned}=DB`, ...moving.map((id) => `${id}=DB`)].join(","));
  });

  it("without --from or --to: the usage, exit code 2", () => {
    const out = run(["--to", "DB,DB2"], "");
    expect(out.status).toBe(2);
    expect(out.stderr).toContain("usage: placement.ts --from DB[,..] --to DB,DB2[,..]");
  });
});
