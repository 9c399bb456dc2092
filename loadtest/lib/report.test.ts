/** Where reports go: new ones are ignored by git, the ones RESULTS.md links to are committed. */
import { execFileSync, spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join, posix, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { LOADTEST_DIR } from "./k6.ts";
import { DEFAULT_REPORT_DIR } from "./report.ts";

const git = (args: string[]) => spawnSync("git", args, { cwd: LOADTEST_DIR, encoding: "utf8" });

describe("report files and git", () => {
  it("a report written to the default folder is ignored, not untracked", () => {
    for (const file of [
      "permify-node-sqlite-2030-01-01-0000.md",
      "permify-node-sqlite-2030-01-01-0000-seed.svg",
    ]) {
      const path = relative(LOADTEST_DIR, join(DEFAULT_REPORT_DIR, file));
      expect(git(["check-ignore", "-q", path]).status, path).toBe(0);
    }
  });

  it("every report RESULTS.md and results-history/ link to, and every image those reports show, is committed", () => {
    const tracked = new Set(
      execFileSync("git", ["ls-files", "reports"], { cwd: LOADTEST_DIR, encoding: "utf8" }).split("\n"),
    );
    const history = readdirSync(join(LOADTEST_DIR, "results-history")).map((f) => `results-history/${f}`);
    const links = ["RESULTS.md", ...history].flatMap((file) =>
      [...readFileSync(join(LOADTEST_DIR, file), "utf8").matchAll(/\]\(((?:\.\.\/)?reports\/[^)#]+)\)/g)].map(
        ([, link]) => posix.normalize(posix.join(posix.dirname(file), link!)),
      ),
    );
    expect(links.length).toBeGreaterThan(0);
    for (const link of links) {
      expect(tracked, link).toContain(link);
      const report = readFileSync(join(LOADTEST_DIR, link!), "utf8");
      for (const [, image] of report.matchAll(/!\[[^\]]*\]\(([^)]+)\)/g))
        expect(tracked, `${link} -> ${image}`).toContain(`reports/${image}`);
    }
  });
});
