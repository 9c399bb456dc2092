/**
 * CI smoke of every `pnpm loadtest` scenario against node-sqlite (small data, a few seconds of load each): the
 * real command, k6, `pemba serve` and HTTP. Each run must pass its own checks (every decision as expected, every
 * request answered 200) and write its report with the scenario's table and a latency chart drawn from samples.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureK6 } from "../lib/k6.ts";

const REPO = resolve(import.meta.dirname, "../..");
const reportDir = mkdtempSync(join(tmpdir(), "pemba-loadtest-smoke-"));

beforeAll(() => {
  ensureK6(); // builds k6 with Go when it is missing (.ci/run does it first)
});
afterAll(() => rmSync(reportDir, { recursive: true, force: true }));

/** Runs `pnpm loadtest <scenario> --smoke` (as its node command) and returns the report's text and charts. */
function smoke(scenario: string): { report: string; charts: string[]; output: string } {
  const run = spawnSync(
    process.execPath,
    [
      "--experimental-strip-types",
      "--no-warnings",
      "loadtest/run.ts",
      scenario,
      "--smoke",
      "--report-dir",
      reportDir,
    ],
    { cwd: REPO, encoding: "utf8", timeout: 170_000 },
  );
  const output = `${run.stdout}${run.stderr}`;
  expect(run.status, output.slice(-4000)).toBe(0);
  const files = readdirSync(reportDir).filter((f) => f.startsWith(`${scenario}-node-sqlite-`));
  const md = files.find((f) => f.endsWith("-smoke.md"));
  expect(md, output.slice(-2000)).toBeDefined();
  const charts = files.filter((f) => f.endsWith(".svg")).map((f) => readFileSync(join(reportDir, f), "utf8"));
  return { report: readFileSync(join(reportDir, md!), "utf8"), charts, output };
}

/** Every chart of the report is an SVG with drawn lines (samples were read from k6's JSON output). */
function expectCharts(report: string, charts: string[], phases: number): void {
  expect(charts).toHaveLength(phases);
  for (const svg of charts) {
    expect(svg.startsWith("<svg xmlns")).toBe(true);
    expect(svg).toContain('<path d="M');
    expect(svg).not.toContain("no samples");
  }
  expect(report.match(/!\[[^\]]*: latency over time\]\([^)]+\.svg\)/g)).toHaveLength(phases);
}

describe("pnpm loadtest --smoke on node-sqlite", () => {
  it("permify: the published scripts at 1,000 ids, then open-model steps", () => {
    const { report, charts } = smoke("permify");
    expect(report).toContain("- result: passed");
    expect(report).toMatch(/\| 1000 \| 6000 \| 2000 \|/); // seeded ids, tuples, attributes
    expect(report).toMatch(/\| checks \| 100\.00% \(\d+ out of \d+\) \| 100\.00% \(74614 out of 74614\) \|/);
    expect(report).toMatch(/\| dropped_iterations \| \d+ \(/);
    expect(report).toMatch(/Highest rate held .*: \*\*\d+\/s\*\*/);
    expect(report).toMatch(/\| 50 \| \d+ \| \d+ \| [\d.]+ \| 0 \|/); // first step: 50/s, no failed check
    expectCharts(report, charts, 3);
  });

  it("zanzigo: 3 tuples x 1,000 ids, 10 and 100 looping VUs, every check allowed", () => {
    const { report, charts } = smoke("zanzigo");
    expect(report).toContain("- result: passed");
    expect(report).toMatch(
      /\| `sqlite-http-10` \| `avg=\S+ min=\S+ med=\S+ max=\S+ p\(90\)=\S+ p\(95\)=\S+` \|/,
    );
    expect(report).toMatch(/\| sqlite-http-100 \| 100\.00% \(\d+ out of \d+\) \|/);
    expectCharts(report, charts, 2);
  });

  it("flagd: generated schema and data, decisions as generated, pinned and quota windows", () => {
    const { report, charts } = smoke("flagd");
    expect(report).toContain("- result: passed");
    expect(report).toMatch(
      /\| 3 types x 500 ids \(mixed\): \d+ tuples, \d+ attributes \| 1 CPU \(taskset -c 0\) \| \d+ \| \d+ MB \|/,
    );
    expect(report).toMatch(/1 CPU \(taskset -c 0\) .*\| 100\.00% \(\d+ out of \d+\) \|/);
    // all CPUs, 1 CPU, and 0.5 CPU when a quota can be set here (else the report says why not)
    const windows = report.includes("The 0.5 CPU run was skipped") ? 2 : 3;
    expectCharts(report, charts, 1 + windows);
  });

  it("zitadel: JWT machine clients against a local JWKS, mixed load, top SQL statements", () => {
    const { report, charts, output } = smoke("zitadel");
    expect(output).toContain("token of an unknown key: HTTP 401");
    expect(report).toContain("- result: passed");
    expect(report).toMatch(/\| VUs \| 20 \| 600 \|/);
    expect(report).toMatch(/\| checks \| 100\.00% \(\d+ out of \d+\) \|/);
    expect(report).toMatch(/\| Observed errors \| 0 failed requests of \d+ \|/);
    expect(report).toMatch(/\| Top 3 most expensive database queries \| 1: \w+ \([\d.]+ s in \d+ statements/);
    expect(report).toMatch(/\| lookup-entity \| \S+ \|/);
    const memory = charts.filter((svg) => svg.includes(": server memory"));
    expectCharts(
      report,
      charts.filter((svg) => !memory.includes(svg)),
      1,
    );
    expect(memory).toHaveLength(1);
    expect(memory[0]).toContain('<path d="M');
    expect(report).toMatch(/## Server memory over time\n\n!\[Server memory over time\]\([^)]+-memory\.svg\)/);
  });
});
