import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { helpOptionLines } from "@pemba/core";
import { describe, expect, it } from "vitest";
import { nodeVersionProblem } from "../src/node-version.ts";
import { REPO_DIR, runCli } from "../src/testing/cli-process.ts";

const version = (
  JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }
).version;

describe("pemba CLI", () => {
  it("--version prints the package version", async () => {
    const r = await runCli(["--version"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`pemba ${version}\n`);
  });

  it("--help documents every command, option and environment variable", async () => {
    const r = await runCli(["--help"]);
    expect(r.code).toBe(0);
    for (const text of [
      "pemba serve",
      "pemba validate <file.yaml> [--unchecked]",
      "pemba migrate",
      "pemba schema diff <old.perm> <new.perm> [--database <url>]",
      "pemba explain <type:id> <permission> <type:id[#relation]> [options]",
      "pemba export (--database <url> | --url <server>) [--tenant <id>] [-o <file>]",
      "pemba import (--database <url> | --url <server>) [--tenant <id>] <file|->",
      ...[
        "on-conflict",
        "dry-run",
        "errors",
        "max-errors",
        "checkpoint",
        "chunk-rows",
        "request-bytes",
        "from",
      ].map((o) => `--${o} `),
      "--version",
      ...[
        "database",
        "host",
        "port",
        "auth-keys",
        "jwks-url",
        "audience",
        "issuer",
        "cors-origins",
        "public-paths",
        "gc-window",
        "replica",
        "replica-refresh",
        "replica-memory",
        "compact-after-writes",
        "max-watch-streams",
        "max-compiled-schema-mb",
        "log-level",
        "schema-writes",
      ].map((o) => `--${o} `),
      "--insecure-bind-any",
      ...[
        "DATABASE",
        "HOST",
        "PORT",
        "AUTH_KEYS",
        "JWKS_URL",
        "AUDIENCE",
        "ISSUER",
        "CORS_ORIGINS",
        "PUBLIC_PATHS",
        "GC_WINDOW",
        "REPLICA",
        "REPLICA_REFRESH",
        "REPLICA_MEMORY",
        "COMPACT_AFTER_WRITES",
        "MAX_WATCH_STREAMS",
        "MAX_COMPILED_SCHEMA_MB",
        "LOG_LEVEL",
        "SCHEMA_WRITES",
      ].map((e) => `env PEMBA_${e}`),
      "./pemba.db on 127.0.0.1:3476",
      // the options as the one settings definition renders them
      helpOptionLines(),
    ]) {
      expect(r.stdout).toContain(text);
    }
  });

  it("`<command> --help` / `-h` prints the help and exits 0 without running the command", async () => {
    const help = (await runCli(["--help"])).stdout;
    for (const args of [
      ["serve", "--help"],
      ["serve", "--port", "1", "-h"],
      ["validate", "--help"],
      ["migrate", "-h"],
      ["explain", "--help"],
      ["export", "--help"],
      ["import", "--help"],
    ]) {
      const r = await runCli(args);
      expect(r).toMatchObject({ code: 0, stdout: help, stderr: "" });
    }
  });

  it("a Node.js older than 22 is refused with a version message", () => {
    expect(nodeVersionProblem("22.0.0")).toBeUndefined();
    expect(nodeVersionProblem("24.1.0")).toBeUndefined();
    expect(nodeVersionProblem("20.20.2")).toBe(
      `Node.js 22 or newer is required; this is Node.js 20.20.2 (${process.execPath})`,
    );
    expect(nodeVersionProblem("18.0.0")).toMatch(
      /^Node\.js 22 or newer is required; this is Node\.js 18\.0\.0 /,
    );
  });

  // The real thing on an old Node when the machine has one (Debian's /usr/bin/node is 20 here).
  const oldNode = ["/usr/bin/node", "/usr/local/bin/node"].find(
    (p) =>
      existsSync(p) && Number(execFileSync(p, ["-p", "process.versions.node"]).toString().split(".")[0]) < 22,
  );
  it.runIf(oldNode !== undefined)("the bundled CLI on an old Node exits 1 with the version message", () => {
    const node = oldNode as string;
    const version = execFileSync(node, ["-p", "process.versions.node"]).toString().trim();
    const r = spawnSync(
      node,
      [resolve(REPO_DIR, "packages/node-server/dist/pemba.mjs"), "serve", "--port", "0"],
      {
        encoding: "utf8",
        timeout: 20_000,
      },
    );
    expect(r.status).toBe(1);
    expect(r.stderr).toBe(`pemba: Node.js 22 or newer is required; this is Node.js ${version} (${node})\n`);
    expect(r.stdout).toBe("");
  });

  it("an unknown command exits 2 with a hint", async () => {
    const r = await runCli(["frobnicate"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('pemba: unknown command "frobnicate"; run `pemba --help`\n');
  });

  it("serve refuses a non-loopback host without authentication", async () => {
    const r = await runCli(["serve", "--host", "0.0.0.0", "--port", "0"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("pemba: refusing to bind 0.0.0.0 without authentication");
    expect(r.stderr).toContain("--insecure-bind-any");
    expect(r.stdout).toBe("");
  });

  it("serve refuses a non-loopback PEMBA_HOST from the environment too", async () => {
    const r = await runCli(["serve", "--port", "0"], { PEMBA_HOST: "::" });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("pemba: refusing to bind :: without authentication");
  });

  it("serve rejects an invalid port and an unknown flag", async () => {
    const bad = await runCli(["serve", "--port", "99999"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe('pemba: invalid --port "99999"; expected 0 to 65535\n');
    const unknown = await runCli(["serve", "--bogus"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("Unknown option '--bogus'");
  });
});
