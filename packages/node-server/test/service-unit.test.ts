/**
 * examples/systemd/pemba.service: it starts the command `npm i -g` installs, every variable it sets is a setting of
 * `pemba serve` and resolves to what its comments say, and systemd's own parser accepts the unit.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resolveNodeSettings, settingsOf } from "@pemba/core";
import { describe, expect, it } from "vitest";
import { REPO_DIR } from "../src/testing/cli-process.ts";

const UNIT = readFileSync(join(REPO_DIR, "examples/systemd/pemba.service"), "utf8");
const HAS_ANALYZE = (() => {
  try {
    execFileSync("systemd-analyze", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();
const directives = (name: string) =>
  UNIT.split("\n")
    .filter((l) => l.startsWith(`${name}=`))
    .map((l) => l.slice(name.length + 1));

describe("examples/systemd/pemba.service", () => {
  it("runs the npm-installed pemba serve, its database in the state directory", () => {
    expect(directives("ExecStart")).toEqual(["/usr/local/bin/pemba serve"]);
    expect(directives("StateDirectory")).toEqual(["pemba"]);
    expect(directives("KillSignal")).toEqual(["SIGTERM"]);
  });

  it("sets only settings of pemba serve, which resolve to the state directory's file on loopback", () => {
    const env = Object.fromEntries(directives("Environment").map((d) => d.split("=", 2) as [string, string]));
    const known = new Set<string>(settingsOf("node").map(([, def]) => def.env));
    expect(Object.keys(env).filter((k) => !known.has(k))).toEqual([]);
    const settings = resolveNodeSettings({}, env);
    expect(settings).toMatchObject({ database: "/var/lib/pemba/pemba.db", host: "127.0.0.1", port: 3476 });
  });

  it.skipIf(!HAS_ANALYZE)(
    "systemd-analyze verify accepts it (ExecStart pointed at this machine's node)",
    () => {
      const dir = mkdtempSync(join(tmpdir(), "pemba-unit-"));
      try {
        const unit = join(dir, "pemba.service");
        writeFileSync(unit, UNIT.replace("/usr/local/bin/pemba serve", `${process.execPath} --version`));
        const out = execFileSync("systemd-analyze", ["verify", "--man=no", unit], {
          encoding: "utf8",
          stdio: ["ignore", "pipe", "pipe"],
        });
        expect(out).toBe("");
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
