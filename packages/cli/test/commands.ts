/** Child processes for the package's tests: run a command to its end, or start a server and wait for a line. */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { join, resolve } from "node:path";

export const CLI_DIR = resolve(import.meta.dirname, "..");
export const REPO_DIR = resolve(CLI_DIR, "../..");

export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Text written to the command's stdin. */
  input?: string;
}

/** Runs `command` to its end; never throws for a non-zero exit. */
export function run(command: string, args: string[], opts: RunOptions = {}): Promise<Ran> {
  return new Promise((done, fail) => {
    const child = spawn(command, args, { cwd: opts.cwd, env: opts.env ?? process.env, stdio: "pipe" });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => {
      stdout += c.toString();
    });
    child.stderr.on("data", (c: Buffer) => {
      stderr += c.toString();
    });
    child.on("error", fail);
    child.on("close", (code) => done({ code, stdout, stderr }));
    child.stdin.end(opts.input ?? "");
  });
}

/** `run`, failing with its output unless it exits 0; resolves with stdout. */
export async function runOk(command: string, args: string[], opts: RunOptions = {}): Promise<string> {
  const r = await run(command, args, opts);
  if (r.code !== 0) {
    throw new Error(
      `${command} ${args.join(" ")} exited ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`,
    );
  }
  return r.stdout;
}

export interface Started {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

/** Starts `command` and resolves once its stdout has a line `match` accepts (or fails when it exits first). */
export function startUntil(
  command: string,
  args: string[],
  match: (line: string) => boolean,
  opts: RunOptions = {},
): Promise<Started & { line: string }> {
  const child = spawn(command, args, { cwd: opts.cwd, env: opts.env ?? process.env, stdio: "pipe" });
  let out = "";
  const exited = new Promise<number | null>((done) => child.on("close", done));
  return new Promise((done, fail) => {
    const timer = setTimeout(() => fail(new Error(`no matching line after 60 s:\n${out}`)), 60_000);
    child.stdout.on("data", (c: Buffer) => {
      out += c.toString();
      const line = out.split("\n").find(match);
      if (line !== undefined) {
        clearTimeout(timer);
        done({ child, output: () => out, exited, line });
      }
    });
    child.stderr.on("data", (c: Buffer) => {
      out += c.toString();
    });
    void exited.then((code) => {
      clearTimeout(timer);
      fail(new Error(`${command} exited ${code} before the line:\n${out}`));
    });
  });
}

/** A TCP port free at the moment of asking. */
export function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.on("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => done(port));
    });
  });
}

/**
 * `npm pack` of packages/cli into `dest` (its prepack script builds dist/ first); the tarball's path. The
 * environment keeps npm_config_nodedir, which better-sqlite3 needs to build where no prebuilt addon fits.
 */
export function packCli(dest: string): string {
  const out = execFileSync("npm", ["pack", "--pack-destination", dest, "--json"], {
    cwd: CLI_DIR,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });
  const [{ filename }] = JSON.parse(out) as [{ filename: string }];
  const tarball = join(dest, filename);
  if (!existsSync(tarball)) throw new Error(`npm pack wrote no ${tarball}`);
  return tarball;
}

/** The package.json of a workspace package. */
export function manifestOf(dir: string): Record<string, unknown> & { dependencies?: Record<string, string> } {
  return JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
}

/** The one shell block of the root README that has a line `match` accepts. */
export function readmeBlock(match: (line: string) => boolean): string {
  const readme = readFileSync(join(REPO_DIR, "README.md"), "utf8");
  const blocks = [...readme.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
  const found = blocks.filter((b) => b.split("\n").some(match));
  if (found.length !== 1) throw new Error(`README.md: ${found.length} shell blocks have the line ${match}`);
  return found[0]!;
}
