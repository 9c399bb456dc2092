/**
 * The shell blocks of the repository's READMEs, and a way to run one as written: bash in the repository root (where
 * a fresh clone's reader is), with this test's own ports and database put in where the README names the defaults.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_DIR } from "../src/testing/cli-process.ts";

export interface ShellBlock {
  /** The README, relative to the repository root. */
  file: string;
  /** The block's text, without its fences. */
  text: string;
}

/** Every ```sh (or bash, shell, console) block of a README, in order. */
export function shellBlocks(file: string): ShellBlock[] {
  const markdown = readFileSync(join(REPO_DIR, file), "utf8");
  return [...markdown.matchAll(/^```(?:sh|bash|shell|console)\n([\s\S]*?)^```$/gm)].map((m) => ({
    file,
    text: m[1]!.replace(/\n$/, ""),
  }));
}

/** The one shell block of `file` that has a line `match` accepts. */
export function blockWithLine(file: string, match: (line: string) => boolean): string {
  const blocks = shellBlocks(file).filter((b) => b.text.split("\n").some(match));
  if (blocks.length !== 1) throw new Error(`${file}: ${blocks.length} shell blocks have the line ${match}`);
  return blocks[0]!.text;
}

export interface BlockRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `text` with bash in the repository root. `replace` swaps literal text first (a README's default port for
 * this test's); `env` adds variables (PEMBA_PORT, PEMBA_DATABASE: settings the commands read as a user's would).
 */
export function runBlock(
  text: string,
  opts: { env?: Record<string, string>; replace?: Record<string, string>; timeoutMs?: number } = {},
): Promise<BlockRun> {
  let script = text;
  for (const [from, to] of Object.entries(opts.replace ?? {})) script = script.replaceAll(from, to);
  const env = { ...process.env };
  for (const key of Object.keys(env)) if (key.startsWith("PEMBA_")) delete env[key];
  return new Promise((done, fail) => {
    const child = spawn("bash", ["-c", script], {
      cwd: REPO_DIR,
      env: { ...env, ...opts.env },
      stdio: ["ignore", "pipe", "pipe"],
      // a process group of its own: what the block left running is stopped with it
      detached: true,
    });
    const stopGroup = (signal: NodeJS.Signals) => {
      try {
        process.kill(-child.pid!, signal);
      } catch {
        // the group has exited
      }
    };
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => {
      stdout += c.toString();
    });
    child.stderr.on("data", (c: Buffer) => {
      stderr += c.toString();
    });
    const timer = setTimeout(() => {
      stopGroup("SIGKILL");
      fail(new Error(`block did not finish in time:\n${script}\nstdout:\n${stdout}\nstderr:\n${stderr}`));
    }, opts.timeoutMs ?? 90_000);
    // "close" comes once every process of the block closed its output: a server started with & and stopped by
    // the block's own kill included
    child.on("close", (code) => {
      clearTimeout(timer);
      stopGroup("SIGKILL");
      done({ code, stdout, stderr });
    });
  });
}

/** The lines of `output` the commands printed: without the server's JSON log lines and pnpm's script banners. */
export function withoutLogLines(output: string): string[] {
  return output.split("\n").filter((l) => l !== "" && !l.startsWith("{") && !l.startsWith("> "));
}
