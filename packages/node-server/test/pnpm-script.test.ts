/**
 * The scripts as a user runs them. The root `pnpm pemba`: `pnpm pemba serve &` then `kill $!` signals pnpm, not the
 * server; the script execs node (no shell in between), so pnpm's forwarded SIGTERM reaches the server itself. The
 * script runs in the repository root, yet a relative path names a file in the directory the user ran pnpm from.
 * A package's own `pnpm --filter <package> test`: runs that package's vitest project(s) of the root config.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { freePort } from "@pemba/core/testing/node";
import { OFFLINE_ENV } from "@pemba/worker/testing";
import { describe, expect, it } from "vitest";
import rootConfig from "../../../vitest.config.ts";
import { REPO_DIR } from "../src/testing/cli-process.ts";

/** pnpm as the test runner was started with it (npm_execpath), else the `pnpm` on PATH. */
function pnpmCommand(): [string, string[]] {
  const execPath = process.env.npm_execpath;
  if (execPath?.includes("pnpm"))
    return /\.[cm]?js$/.test(execPath) ? [process.execPath, [execPath]] : [execPath, []];
  return ["pnpm", []];
}

/** Pids of the live descendants of `pid` (Linux /proc). */
function descendants(pid: number): number[] {
  const parentOf = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      parentOf.set(Number(entry), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      // exited meanwhile
    }
  }
  const found: number[] = [];
  const walk = (p: number) => {
    for (const [child, parent] of parentOf)
      if (parent === p) {
        found.push(child);
        walk(child);
      }
  };
  walk(pid);
  return found;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

const commandLine = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
  } catch {
    return "";
  }
};

const portOpen = (port: number) =>
  new Promise<boolean>((done) => {
    const socket = connect(port, "127.0.0.1");
    socket.on("connect", () => {
      socket.destroy();
      done(true);
    });
    socket.on("error", () => done(false));
  });

/** Runs `pnpm <args>` in the repository, collecting stdout and stderr. */
function startPnpm(args: string[], env: NodeJS.ProcessEnv = process.env) {
  const [command, prefix] = pnpmCommand();
  const child = spawn(command, [...prefix, ...args], {
    cwd: REPO_DIR,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const append = (c: Buffer) => {
    output += c.toString();
  };
  child.stdout.on("data", append);
  child.stderr.on("data", append);
  const exited = new Promise<number | null>((done) => child.on("exit", (code) => done(code)));
  return { child, output: () => output, exited };
}

/** Signals pnpm and expects it, every process it had started and the port gone within 10 s. */
async function expectStopsOn(
  signal: NodeJS.Signals,
  pnpm: ReturnType<typeof startPnpm>,
  pids: number[],
  port: number,
): Promise<void> {
  expect(await portOpen(port)).toBe(true);
  pnpm.child.kill(signal);
  const gone = Date.now() + 10_000;
  const all = [pnpm.child.pid as number, ...pids];
  while (all.some(alive) && Date.now() < gone) await new Promise((r) => setTimeout(r, 50));
  expect(all.filter(alive)).toEqual([]);
  expect(await portOpen(port)).toBe(false);
}

const killAll = (pids: number[]) => {
  for (const pid of pids) if (alive(pid)) process.kill(pid, "SIGKILL");
};

describe("pnpm pemba", () => {
  it("SIGTERM to the pnpm process stops the server: no process left, port closed", async () => {
    const pnpm = startPnpm(["pemba", "serve", "--database", "memory:", "--port", "0", "--grpc-port", "0"]);
    let serverPids: number[] = [];
    try {
      const deadline = Date.now() + 60_000;
      let port = 0;
      while (port === 0) {
        const m = /pemba listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(pnpm.output());
        if (m) port = Number(m[1]);
        else if (pnpm.child.exitCode !== null || Date.now() > deadline)
          throw new Error(`no server:\n${pnpm.output()}`);
        else await new Promise((r) => setTimeout(r, 50));
      }
      serverPids = descendants(pnpm.child.pid as number);
      expect(serverPids.length).toBeGreaterThan(0);
      await expectStopsOn("SIGTERM", pnpm, serverPids, port);
      expect(pnpm.output()).toContain("pemba stopped");
    } finally {
      killAll([pnpm.child.pid as number, ...serverPids]);
    }
  });

  it("validate and codegen resolve relative paths against the directory pnpm was run from", () => {
    const dir = mkdtempSync(join(tmpdir(), "pemba-pnpm-cwd-"));
    try {
      const schema =
        "entity user {}\nentity document {\n  relation viewer @user\n  permission view = viewer\n}\n";
      writeFileSync(join(dir, "schema.perm"), schema);
      writeFileSync(
        join(dir, "authz.yaml"),
        "schema: schema.perm\nrelationships:\n  - document:1#viewer@user:bob\nscenarios:\n  - name: viewers\n" +
          '    checks:\n      - entity: "document:1"\n        subject: "user:bob"\n        assertions:\n          view: true\n',
      );
      // from `dir`, outside the repository: --dir names the repository, the paths stay relative to `dir`
      const pnpm = (...args: string[]) => {
        const [command, prefix] = pnpmCommand();
        return spawnSync(command, [...prefix, "--silent", "--dir", REPO_DIR, "pemba", ...args], {
          cwd: dir,
          encoding: "utf8",
          timeout: 60_000,
        });
      };
      const validated = pnpm("validate", "./authz.yaml");
      expect(validated.stderr).toBe("");
      expect(validated.status).toBe(0);
      expect(validated.stdout).toMatch(/^SUCCESS: 1 of 1 assertion passed\nvalidated \.\/authz\.yaml in /);

      const generated = pnpm("codegen", "schema.perm", "-o", "authz.ts");
      expect(generated.status).toBe(0);
      expect(readFileSync(join(dir, "authz.ts"), "utf8")).toContain('permissions: "view";');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("pnpm --filter @pemba/worker run dev", () => {
  // the script execs node scripts/wrangler-dev.mjs, which passes the signal on to wrangler (a shell in between would
  // die on the signal pnpm forwards and leave wrangler serving) and ends an asked-for stop with status 0
  it.each(["SIGTERM", "SIGINT"] as const)(
    "%s to the pnpm process stops wrangler and workerd: no process left, port closed, pnpm exits 0 (no ERR_PNPM)",
    async (signal) => {
      const [port, inspectorPort] = [await freePort(), await freePort()];
      const state = mkdtempSync(join(tmpdir(), "pemba-worker-dev-"));
      const pnpm = startPnpm(
        [
          "--filter",
          "@pemba/worker",
          "run",
          "dev",
          ...["--ip", "127.0.0.1", "--port", String(port), "--inspector-port", String(inspectorPort)],
          ...["--persist-to", state, "--show-interactive-dev-session=false", "--log-level", "warn"],
        ],
        { ...process.env, ...OFFLINE_ENV, WRANGLER_LOG_PATH: join(state, "logs") },
      );
      let pids: number[] = [];
      try {
        const deadline = Date.now() + 90_000;
        for (;;) {
          if (pnpm.child.exitCode !== null || Date.now() > deadline)
            throw new Error(`wrangler dev did not answer:\n${pnpm.output()}`);
          const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then(
            (r) => r.ok,
            () => false,
          );
          if (ok) break;
          await new Promise((r) => setTimeout(r, 200));
        }
        pids = descendants(pnpm.child.pid as number);
        const workerd = pids.filter((pid) => commandLine(pid).includes("workerd"));
        expect(workerd.length).toBeGreaterThan(0);
        await expectStopsOn(signal, pnpm, pids, port);
        expect(await pnpm.exited, pnpm.output()).toBe(0);
        expect(pnpm.output()).not.toContain("ERR_PNPM");
      } finally {
        killAll([pnpm.child.pid as number, ...pids]);
        rmSync(state, { recursive: true, force: true });
      }
    },
    150_000,
  );
});

/** The vitest projects of the root config: name and folder (relative to the repository). */
function vitestProjects(): { name: string; root: string }[] {
  const projects = (rootConfig.test?.projects ?? []) as (
    | string
    | { test?: { name?: string; root?: string } }
  )[];
  return projects.map((p) => {
    if (typeof p !== "string") return { name: p.test?.name ?? "", root: p.test?.root ?? "" };
    const text = readFileSync(join(REPO_DIR, p), "utf8");
    return { name: /\bname: "([^"]+)"/.exec(text)?.[1] ?? "", root: dirname(p) };
  });
}

describe("pnpm --filter <package> test", () => {
  it("every package's test script runs exactly its own projects of the root vitest config", () => {
    const projects = vitestProjects();
    for (const dir of [
      "packages/cli",
      "packages/core",
      "packages/node-server",
      "packages/sdk",
      "packages/worker",
    ]) {
      const pkg = JSON.parse(readFileSync(join(REPO_DIR, dir, "package.json"), "utf8")) as {
        scripts: Record<string, string>;
      };
      const script = pkg.scripts.test;
      const named = [...script.matchAll(/--project (\S+)/g)].map((m) => m[1]).sort();
      const own = projects
        .filter((p) => relative(p.root, dir) === "")
        .map((p) => p.name)
        .sort();
      expect({ dir, named }).toEqual({ dir, named: own });
      expect(script).toMatch(/^cd \.\.\/\.\. && vitest run /);
    }
  });

  it("runs the package's tests (core, one file)", () => {
    const [command, prefix] = pnpmCommand();
    const r = spawnSync(command, [...prefix, "--filter", "@pemba/core", "test", "src/http/convert.test.ts"], {
      cwd: REPO_DIR,
      encoding: "utf8",
      env: { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0" },
      timeout: 120_000,
    });
    expect(r.status).toBe(0);
    expect(r.stdout).toContain("src/http/convert.test.ts");
    expect(r.stdout).toMatch(/Test Files\s+1 passed \(1\)/);
  });
});
