/** `pemba schema diff <old> <new> [--database ...]`: the real CLI on schema files and a real SQLite file. */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PembaService } from "@pemba/core";
import { SqliteStore } from "@pemba/core/node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../src/testing/cli-process.ts";

const OLD = `entity user {}
entity team { relation member @user }
entity doc {
  relation owner @user
  relation editor @user @team#member
  attribute level integer
  permission edit = owner or editor
}
`;
const NEW = `entity user {}
entity doc {
  relation owner @user
  relation editor @user
  attribute level string
  permission edit = owner or editor
}
`;
const ADDED = OLD.replace("  permission edit", "  relation viewer @user\n  permission edit");
const FLIP = OLD.replace("permission edit = owner or editor", "permission edit = owner");

describe("pemba schema diff", () => {
  let dir: string;
  let db: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "pemba-schema-diff-"));
    for (const [name, text] of Object.entries({ OLD, NEW, ADDED, FLIP }))
      writeFileSync(join(dir, `${name}.perm`), text);
    db = join(dir, "pemba.db");
    const store = SqliteStore.open(db);
    const service = new PembaService(store);
    const version = await service.writeSchema("t1", OLD);
    const u = (id: string) => ({ type: "user", id, relation: "" });
    await service.writeData(
      "t1",
      version,
      [
        { entity: { type: "doc", id: "1" }, relation: "owner", subject: u("alice") },
        {
          entity: { type: "doc", id: "1" },
          relation: "editor",
          subject: { type: "team", id: "a", relation: "member" },
        },
        { entity: { type: "team", id: "a" }, relation: "member", subject: u("bob") },
        { entity: { type: "doc", id: "2" }, relation: "editor", subject: u("carol") },
      ],
      [
        {
          entity: { type: "doc", id: "1" },
          attribute: "level",
          value: { type: "ATTRIBUTE_TYPE_INTEGER", data: 1 },
        },
      ],
    );
    await store.close();
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("without --database: the structure; exit 1 on a removal or type change, 0 on additions only", async () => {
    const r = await runCli(["schema", "diff", "OLD.perm", "NEW.perm"], {}, dir);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(
      new RegExp(
        `^${[
          "schema diff OLD.perm -> NEW.perm: structure only \\(no --database\\)",
          "removed:",
          "  entity team: rows not measured \\(no --database\\)",
          "attribute type changes:",
          "  doc#level ATTRIBUTE_TYPE_INTEGER -> ATTRIBUTE_TYPE_STRING: values not measured \\(no --database\\)",
          "decisions:",
          "  doc#edit: definition or a dependency changed \\(decisions not measured\\)",
          "diffed in \\d+\\.\\d ms",
        ].join("\n")}\n$`,
      ),
    );
    const added = await runCli(["schema", "diff", "OLD.perm", "ADDED.perm"], {}, dir);
    expect(added.code).toBe(0);
    expect(added.stdout).toContain(
      "added:\n  relation doc#viewer\n1 permission unchanged (definition and dependencies)\n",
    );
  });

  it("with --database: rows orphaned, values that no longer fit, flipped pairs with examples; exit 1", async () => {
    const r = await runCli(["schema", "diff", "OLD.perm", "NEW.perm", "--database", "pemba.db"], {}, dir);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(1);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(
      /^schema diff OLD\.perm -> NEW\.perm: data of tenant t1 in sqlite:pemba\.db at snap token \S+$/,
    );
    expect(lines.slice(1, -1)).toEqual([
      "removed:",
      // team:a#member@bob and doc:1#editor@team:a#member
      "  entity team: orphans 2 tuples",
      "attribute type changes:",
      "  doc#level ATTRIBUTE_TYPE_INTEGER -> ATTRIBUTE_TYPE_STRING: 1 of 1 stored value no longer fit",
      "decisions:",
      // docs 1, 2 x users alice, bob, carol: bob loses doc 1 (through team a)
      "  doc#edit: 1 ALLOWED -> DENIED, 0 DENIED -> ALLOWED in all 6 pairs",
      "    doc:1 user:bob: ALLOWED -> DENIED",
    ]);
    expect(lines.at(-1)).toMatch(/^diffed in \d+\.\d ms$/);
  });

  it("--json prints the endpoint's JSON; only flips: exit 0, or 1 with --fail-on-flips; --sample samples", async () => {
    const base = ["schema", "diff", "OLD.perm", "FLIP.perm", "--database", db];
    const r = await runCli([...base, "--json"], {}, dir);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      base_version: "",
      snap_token: expect.any(String),
      measured: true,
      orphaned_rows: 0,
      sample: { size: 5000, seed: 1, pair_budget: 50000, limited_by_budget: false },
      removed: [],
      added: [],
      attribute_type_changes: [],
      permissions: [
        {
          entity: "doc",
          permission: "edit",
          subject_types: ["user"],
          pairs: 6,
          checked: 6,
          sampled: false,
          allowed_to_denied: 2,
          denied_to_allowed: 0,
          examples: [
            {
              entity: { type: "doc", id: "1" },
              subject: { type: "user", id: "bob", relation: "" },
              from: "CHECK_RESULT_ALLOWED",
              to: "CHECK_RESULT_DENIED",
            },
            {
              entity: { type: "doc", id: "2" },
              subject: { type: "user", id: "carol", relation: "" },
              from: "CHECK_RESULT_ALLOWED",
              to: "CHECK_RESULT_DENIED",
            },
          ],
        },
      ],
      unchanged_permissions: 0,
    });
    expect((await runCli([...base, "--fail-on-flips"], {}, dir)).code).toBe(1);
    const sampled = await runCli([...base, "--sample", "4"], {}, dir);
    expect(sampled.stdout).toMatch(
      /doc#edit: \d ALLOWED -> DENIED, 0 DENIED -> ALLOWED in a sample of 4 of 6 pairs \(seed 1\)/,
    );
  });

  it("usage errors and a missing SQLite file exit 2; a schema error exits 1 with its message", async () => {
    expect(await runCli(["schema", "diff", "OLD.perm"], {}, dir)).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^usage: pemba schema diff/),
    });
    expect((await runCli(["schema", "frob"], {}, dir)).code).toBe(2);
    expect((await runCli(["schema", "diff", "OLD.perm", "NEW.perm", "--sample", "0"], {}, dir)).code).toBe(2);
    expect(
      await runCli(["schema", "diff", "OLD.perm", "NEW.perm", "--database", "nope.db"], {}, dir),
    ).toMatchObject({
      code: 2,
      stderr: "pemba: --database nope.db: no such SQLite file\n",
    });
    writeFileSync(join(dir, "BAD.perm"), "entity doc {");
    expect(await runCli(["schema", "diff", "OLD.perm", "BAD.perm"], {}, dir)).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/^pemba: 1:\d+:/),
    });
  });
});
