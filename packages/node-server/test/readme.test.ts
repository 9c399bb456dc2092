/**
 * The documentation as a newcomer meets it: the README's "Using it" block runs as written against a real
 * `pemba serve` and prints what it says, and no document points at paths of the machine it was written on.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliProcess, REPO_DIR, runCli, startServe } from "./cli-process.ts";

const readme = readFileSync(join(REPO_DIR, "README.md"), "utf8");

/** The lines of the first ```sh block after the heading `## Using it`. */
function usingItBlock(): string[] {
  const section = readme.slice(readme.indexOf("## Using it"));
  const start = section.indexOf("```sh\n") + "```sh\n".length;
  return section.slice(start, section.indexOf("```", start)).trimEnd().split("\n");
}

describe("README", () => {
  let dir: string;
  let server: (CliProcess & { url: string }) | undefined;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "pemba-readme-"));
    server = await startServe(["--database", join(dir, "pemba.db")]);
  });
  afterAll(async () => {
    if (server && server.child.exitCode === null) {
      server.child.kill("SIGTERM");
      await server.exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it("the curl block waits for the server, then answers what its comment says", () => {
    const lines = usingItBlock();
    expect(lines[0]).toBe("pnpm pemba serve &");
    const firstCurl = lines.findIndex((l) => l.startsWith("curl "));
    expect(lines[firstCurl - 1]).toMatch(/^until curl -sf localhost:3476\/healthz; do sleep 0\.2; done/);
    const url = (server as { url: string }).url;
    let last = "";
    for (const line of lines.slice(
      1,
      lines.findIndex((l) => l.startsWith("# ")),
    )) {
      last = execFileSync("bash", ["-c", line.replaceAll("localhost:3476", url.replace("http://", ""))], {
        encoding: "utf8",
        timeout: 30_000,
      });
    }
    const comment = lines.find((l) => l.startsWith("# ")) as string;
    expect(JSON.parse(last)).toEqual(JSON.parse(comment.slice(2)));
  });

  it("the explain block (after the curl block wrote its data) prints the proof its comments show", async () => {
    const section = readme.slice(readme.indexOf("**Why was it allowed, or denied?**"));
    const start = section.indexOf("```sh\n") + "```sh\n".length;
    const [command, ...comments] = section.slice(start, section.indexOf("```", start)).trimEnd().split("\n");
    const args = command.replace(/\s+#.*$/, "").split(" ");
    expect(args.slice(0, 3)).toEqual(["pnpm", "pemba", "explain"]);
    const r = await runCli([...args.slice(2), "--url", (server as { url: string }).url]);
    expect(r).toMatchObject({ code: 0, stderr: "" });
    expect(r.stdout).toBe(`${comments.map((l) => l.slice(2)).join("\n")}\n`);
  });

  it("no tracked file names a path of the machine it was written on", () => {
    const machinePath = ["", "work", ""].join("/");
    const files = execFileSync("git", ["ls-files", "-z"], { cwd: REPO_DIR, encoding: "utf8" })
      .split("\0")
      .filter((f) => f !== "" && !f.endsWith("pnpm-lock.yaml"));
    const offenders = files.filter((f) => {
      try {
        return readFileSync(join(REPO_DIR, f), "utf8").includes(machinePath);
      } catch {
        return false; // deleted in the working tree
      }
    });
    expect(offenders).toEqual([]);
  });
});
