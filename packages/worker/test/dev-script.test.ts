/**
 * The README's local run: `pnpm --filter @pemba/worker run dev` serves the Worker, and stopping it the documented
 * ways (Ctrl-C: SIGINT to the terminal's process group; `kill <pnpm pid>`: SIGTERM to pnpm) stops wrangler and
 * workerd and ends pnpm with status 0, without pnpm's ERR_PNPM_RECURSIVE_RUN_FIRST_FAIL report.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { freePort, OFFLINE_ENV, REPO_DIR } from "./wrangler-dev.ts";

/** Starts the dev script through pnpm, as the README's first line does (plus this test's ports and state). */
async function startDevScript() {
  const port = await freePort();
  const inspector = await freePort();
  const state = mkdtempSync(join(tmpdir(), "pemba-dev-script-"));
  const child = spawn(
    "pnpm",
    [
      "--filter",
      "@pemba/worker",
      "run",
      "dev",
      ...["--ip", "127.0.0.1", "--port", String(port), "--inspector-port", String(inspector)],
      ...["--persist-to", state, "--show-interactive-dev-session=false", "--var", "PEMBA_DATABASE:memory:"],
    ],
    {
      cwd: REPO_DIR,
      env: { ...process.env, ...OFFLINE_ENV },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    },
  );
  let output = "";
  child.stdout.on("data", (c: Buffer) => {
    output += c.toString();
  });
  child.stderr.on("data", (c: Buffer) => {
    output += c.toString();
  });
  const exited = new Promise<number | null>((done) => child.on("close", (code) => done(code)));
  const healthz = () =>
    fetch(`http://127.0.0.1:${port}/healthz`).then(
      async (r) => (r.ok ? await r.text() : undefined),
      () => undefined,
    );
  for (let i = 0; i < 900 && child.exitCode === null; i++) {
    const body = await healthz();
    if (body !== undefined) {
      return {
        child,
        exited,
        output: () => output,
        healthz,
        body,
        cleanup: () => rmSync(state, { recursive: true }),
      };
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill("SIGKILL");
  throw new Error(`the dev script never answered /healthz:\n${output}`);
}

describe("pnpm --filter @pemba/worker run dev", () => {
  for (const [how, stop] of [
    ["kill <pnpm pid> (SIGTERM to pnpm)", (pid: number) => process.kill(pid, "SIGTERM")],
    ["Ctrl-C (SIGINT to the process group)", (pid: number) => process.kill(-pid, "SIGINT")],
  ] as const) {
    it(`serves the Worker; ${how} stops wrangler and workerd, and pnpm exits 0`, async () => {
      const dev = await startDevScript();
      try {
        expect(JSON.parse(dev.body)).toEqual({ status: "SERVING" });
        stop(dev.child.pid!);
        expect(await dev.exited, dev.output()).toBe(0);
        expect(dev.output()).not.toContain("ERR_PNPM");
        expect(await dev.healthz()).toBeUndefined();
      } finally {
        if (dev.child.exitCode === null) process.kill(-dev.child.pid!, "SIGKILL");
        dev.cleanup();
      }
    });
  }
});
