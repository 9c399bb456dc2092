/**
 * The documentation as a newcomer meets it: the README's blocks that serve, explain, diff and run the example app
 * run as written (bash in the repository root, with this test's port and database in the settings' variables) and
 * print what they say; no document points at paths of the machine it was written on.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "@pemba/core/testing/node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliProcess, REPO_DIR, runCli, startServe } from "../src/testing/cli-process.ts";
import { blockWithLine, runBlock, withoutLogLines } from "./readme-blocks.ts";

const readme = readFileSync(join(REPO_DIR, "README.md"), "utf8");

/** The lines of the first ```sh block after the heading `## Using it`. */
function usingItBlock(): string[] {
  const section = readme.slice(readme.indexOf("## Using it"));
  const start = section.indexOf("```sh\n") + "```sh\n".length;
  return section.slice(start, section.indexOf("```", start)).trimEnd().split("\n");
}

describe("README", () => {
  let dir: string;
  let port: number;
  let database: string;
  let server: (CliProcess & { url: string }) | undefined;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "pemba-readme-"));
    database = join(dir, "pemba.db");
    port = await freePort();
  });
  afterAll(async () => {
    if (server && server.child.exitCode === null) {
      server.child.kill("SIGTERM");
      await server.exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it("the Using it block runs as written: serves, answers what its comment says, validates the example, stops", async () => {
    const lines = usingItBlock();
    expect(lines[0]).toBe("pnpm pemba serve &");
    const firstCurl = lines.findIndex((l) => l.startsWith("curl "));
    expect(lines[firstCurl - 1]).toMatch(/^until curl -sf localhost:3476\/healthz; do sleep 0\.2; done/);
    const ran = await runBlock(lines.join("\n"), {
      env: { PEMBA_PORT: String(port), PEMBA_DATABASE: database },
      replace: { "localhost:3476": `localhost:${port}` },
    });
    expect(ran.code).toBe(0);
    const comment = lines.find((l) => l.startsWith("# ")) as string;
    // curl prints no newline: the server's log lines may follow an answer on its line
    expect(ran.stdout).toMatch(/\{"schema_version":"\w+"\}/);
    expect(ran.stdout).toMatch(/\{"snap_token":"[\w=]+"\}/);
    expect(/\{"can":.*?\}\}/.exec(ran.stdout)?.[0]).toBe(comment.slice(2));
    const printed = withoutLogLines(ran.stdout);
    expect(printed[0]).toBe("SUCCESS: 11 of 11 assertions passed");
    expect(printed[1]).toMatch(/^validated examples\/authz\.yaml in [\d.]+ ms$/);
    expect(printed).toHaveLength(2);
    // `kill $!` stopped the server (runBlock ends once every process of the block closed its output)
    expect(ran.stdout).toContain('"msg":"pemba stopped; database closed"');
  });

  it("the explain block (on the data the Using it block wrote) prints the proof its comments show", async () => {
    server = await startServe(["--database", database]);
    const section = readme.slice(readme.indexOf("**Why was it allowed, or denied?**"));
    const start = section.indexOf("```sh\n") + "```sh\n".length;
    const [command, ...comments] = section.slice(start, section.indexOf("```", start)).trimEnd().split("\n");
    const args = command.replace(/\s+#.*$/, "").split(" ");
    expect(args.slice(0, 3)).toEqual(["pnpm", "pemba", "explain"]);
    const r = await runCli([...args.slice(2), "--url", (server as { url: string }).url]);
    expect(r).toMatchObject({ code: 0, stderr: "" });
    expect(r.stdout).toBe(`${comments.map((l) => l.slice(2)).join("\n")}\n`);
  });

  it("the schema diff block: the example pair, structure only and on the Using it data, then the endpoint", async () => {
    const block = blockWithLine("README.md", (l) => l.startsWith("pnpm pemba schema diff "));
    const url = (server as { url: string }).url;
    const [structure, measured, endpoint] = block.split("\n");
    const structural = await runBlock(structure!);
    expect(structural.code).toBe(1);
    expect(withoutLogLines(structural.stdout).slice(0, 3)).toEqual([
      "schema diff examples/main.perm -> examples/branch.perm: structure only (no --database)",
      "removed:",
      "  relation doc#owner: rows not measured (no --database)",
    ]);
    const onData = await runBlock(measured!, { replace: { "./pemba.db": database } });
    expect(onData.code).toBe(1);
    expect(withoutLogLines(onData.stdout).slice(1, 3)).toEqual([
      "removed:",
      "  relation doc#owner: orphans 1 tuple",
    ]);
    expect(onData.stdout).toContain("doc#edit: 1 ALLOWED -> DENIED, 0 DENIED -> ALLOWED");
    const answer = await runBlock(endpoint!, { replace: { "localhost:3476": url.replace("http://", "") } });
    expect(answer.code).toBe(0);
    expect(JSON.parse(answer.stdout)).toMatchObject({ removed: [{ kind: "PERMISSION", name: "edit" }] });
  });

  it("the examples block: the example app answers, shares and answers again through Pemba; both stop", async () => {
    const block = blockWithLine("README.md", (l) => l.startsWith("node examples/app/app.mjs &"));
    const appPort = await freePort();
    const ran = await runBlock(block, {
      env: {
        PEMBA_PORT: String(port),
        PEMBA_DATABASE: "memory:",
        PORT: String(appPort),
        PEMBA_URL: `http://127.0.0.1:${port}`,
      },
      replace: { "localhost:3476": `localhost:${port}`, "localhost:3000": `localhost:${appPort}` },
    });
    expect(ran.code).toBe(0);
    expect(withoutLogLines(ran.stdout)).toEqual([
      `app listening on http://127.0.0.1:${appPort} (Pemba at http://127.0.0.1:${port}, tenant t1)`,
      "doc 1",
      "forbidden",
      "doc 1",
    ]);
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
