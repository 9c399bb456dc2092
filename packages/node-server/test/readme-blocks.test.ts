/**
 * Every shell block of every README is covered: the registry below names, for each block, the tests that run its
 * commands (or, for blocks that need a Cloudflare or Grafana Cloud account, what is checked here without one). A
 * new block fails this test until it is registered with a test that runs it; a registered block that is gone fails
 * it too, and so does a covering test that no longer exists.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_DIR } from "../src/testing/cli-process.ts";
import { type ShellBlock, shellBlocks } from "./readme-blocks.ts";

interface Coverage {
  file: string;
  /** A line of the block (its start): it names the block among the file's blocks. */
  line: string;
  /** Files that cover the block, each with a text it holds (a test's title, or the command it runs). */
  by: [file: string, holds: string][];
}

const NEEDS_AN_ACCOUNT = "readme-blocks.test.ts";

const REGISTRY: Coverage[] = [
  {
    file: "README.md",
    line: "pnpm install",
    by: [
      [".ci/run", "pnpm install --frozen-lockfile"],
      [".ci/run", "exec pnpm test"],
      ["packages/node-server/test/pnpm-script.test.ts", "SIGTERM to the pnpm process stops the server"],
    ],
  },
  {
    file: "README.md",
    line: "until curl -sf localhost:3476/healthz; do sleep 0.2; done   # wait until the server answers",
    by: [["packages/node-server/test/readme.test.ts", "the Using it block runs as written"]],
  },
  {
    file: "README.md",
    line: "pnpm pemba explain doc:1 edit user:alice",
    by: [["packages/node-server/test/readme.test.ts", "the explain block"]],
  },
  {
    file: "README.md",
    line: "npm i -g ./packages/cli/pemba-cli-0.1.0.tgz",
    by: [["packages/cli/test/install.test.ts", "the README's install block"]],
  },
  {
    file: "README.md",
    line: "node examples/app/app.mjs &",
    by: [["packages/node-server/test/readme.test.ts", "the examples block"]],
  },
  {
    file: "README.md",
    line: "docker build -t pemba .",
    // podman builds the same Dockerfile from the same context (docker is not installed here)
    by: [
      ["packages/cli/test/container.test.ts", "podman build of the Dockerfile"],
      ["packages/cli/test/container.test.ts", "the data survives a new container"],
    ],
  },
  {
    file: "README.md",
    line: "pnpm pemba schema diff examples/main.perm examples/branch.perm",
    by: [["packages/node-server/test/readme.test.ts", "the schema diff block"]],
  },
  {
    file: "README.md",
    line: "grpcurl -plaintext",
    // grpcurl is not installed here: the same Check over gRPC, and the reflection grpcurl reads the services from
    by: [
      ["packages/node-server/test/grpc-permify-node.test.ts", "permissions: check, bulk check"],
      ["packages/node-server/test/grpc-permify-node.test.ts", "grpc.reflection.v1: lists the services"],
    ],
  },
  {
    file: "README.md",
    line: "pemba serve --auth-keys secret &",
    // `pemba load` runs as written; the working group's runners need a clone from GitHub, so the suite checks the
    // same scenarios' decisions against the loaded files instead
    by: [
      ["packages/node-server/test/load.test.ts", "writes the schema and 23 relationships in batches"],
      ["packages/core/src/testing/authzen/suite.ts", "the interop scenarios (examples/authzen)"],
    ],
  },
  {
    file: "loadtest/README.md",
    line: "pnpm loadtest <scenario>",
    by: [["loadtest/test/smoke.test.ts", "pnpm loadtest --smoke on node-sqlite"]],
  },
  {
    file: "loadtest/README.md",
    line: "k6 cloud login",
    by: [[`packages/node-server/test/${NEEDS_AN_ACCOUNT}`, "blocks that need an account name"]],
  },
  {
    file: "packages/sdk/README.md",
    line: "node packages/sdk/scripts/build.ts",
    by: [
      ["packages/sdk/test/readme.test.ts", "the install steps build, pack and install the tarball"],
      ["packages/sdk/test/package.test.ts", "the packed @pemba/sdk in every runtime"],
    ],
  },
  {
    file: "packages/sdk/README.md",
    line: "pemba codegen schema.perm -o src/authz.ts",
    by: [
      [
        "packages/cli/test/install.test.ts",
        "validate, codegen and schema diff read and write paths relative",
      ],
      ["packages/node-server/test/pnpm-script.test.ts", "validate and codegen resolve relative paths"],
    ],
  },
  {
    file: "packages/worker/README.md",
    line: "pnpm --filter @pemba/worker run dev",
    by: [["packages/node-server/test/pnpm-script.test.ts", "to the pnpm process stops wrangler and workerd"]],
  },
  {
    file: "packages/worker/README.md",
    line: "pnpm --filter @pemba/worker run wrangler login",
    by: [[`packages/node-server/test/${NEEDS_AN_ACCOUNT}`, "blocks that need an account name"]],
  },
];

/** The READMEs git tracks. */
function readmes(): string[] {
  return execFileSync("git", ["ls-files", "*README.md"], { cwd: REPO_DIR, encoding: "utf8" })
    .split("\n")
    .filter((f) => f !== "" && existsSync(join(REPO_DIR, f)));
}

const covers = (entry: Coverage, block: ShellBlock) =>
  entry.file === block.file && block.text.split("\n").some((l) => l.startsWith(entry.line));

describe("README shell blocks", () => {
  const blocks = readmes().flatMap(shellBlocks);

  it("every block is registered with the tests that run it, exactly once", () => {
    expect(blocks.length).toBeGreaterThanOrEqual(REGISTRY.length);
    const unregistered = blocks.filter((b) => REGISTRY.filter((e) => covers(e, b)).length !== 1);
    expect(unregistered.map((b) => `${b.file}:\n${b.text}`)).toEqual([]);
  });

  it("every registered block exists, and its covering tests hold what the registry says", () => {
    for (const entry of REGISTRY) {
      expect(blocks.filter((b) => covers(entry, b)).length, `${entry.file}: ${entry.line}`).toBe(1);
      for (const [file, holds] of entry.by) {
        const path = join(REPO_DIR, file);
        expect(existsSync(path), file).toBe(true);
        expect(readFileSync(path, "utf8"), `${file} covers ${entry.line}`).toContain(holds);
      }
    }
  });

  it("the blocks that need an account name scripts, files and databases that exist", () => {
    const external = blocks.filter((b) =>
      REGISTRY.some((e) => covers(e, b) && e.by.some(([file]) => file.endsWith(NEEDS_AN_ACCOUNT))),
    );
    expect(external.map((b) => b.file).sort()).toEqual(["loadtest/README.md", "packages/worker/README.md"]);
    const text = external.map((b) => b.text).join("\n");
    const worker = JSON.parse(readFileSync(join(REPO_DIR, "packages/worker/package.json"), "utf8")) as {
      scripts: Record<string, string>;
    };
    const scripts = [...text.matchAll(/pnpm --filter @pemba\/worker run (\w+)/g)].map((m) => m[1]!);
    expect(new Set(scripts)).toEqual(new Set(["deploy", "wrangler"]));
    for (const script of scripts) expect(Object.keys(worker.scripts)).toContain(script);
    const files = [...text.matchAll(/loadtest\/k6\/[\w.-]+/g)].map((m) => m[0]);
    expect(files.length).toBeGreaterThanOrEqual(4);
    for (const file of files) expect(existsSync(join(REPO_DIR, file)), file).toBe(true);
    // `wrangler d1 ... pemba` names the database of wrangler.toml
    expect(text).toContain("wrangler d1 create pemba");
    expect(readFileSync(join(REPO_DIR, "wrangler.toml"), "utf8")).toMatch(/^database_name = "pemba"$/m);
  });
});
