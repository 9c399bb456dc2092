import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../src/testing/cli-process.ts";

describe("pemba migrate", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "pemba-migrate-"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("creates the tables of a new SQLite file and names each migration it applied", async () => {
    const database = join(dir, "fresh.db");
    const r = await runCli(["migrate", "--database", database]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split("\n");
    const applied = lines.filter((l) => l.startsWith("applied "));
    expect(applied.length).toBeGreaterThan(0);
    expect(lines.length).toBe(applied.length + 1);
    expect(lines[lines.length - 1]).toMatch(
      new RegExp(`^migrate sqlite:${database}: ${applied.length} migration\\(s\\) applied \\(\\d+ ms\\)$`),
    );
    expect(existsSync(database)).toBe(true);
  });

  it("a second run has nothing to do", async () => {
    const database = join(dir, "fresh.db");
    const r = await runCli(["migrate"], { PEMBA_DATABASE: database });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^migrate sqlite:${database}: already up to date \\(\\d+ ms\\)\\n$`));
  });
});
