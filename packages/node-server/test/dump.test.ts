/**
 * `pemba export` and `pemba import`: the real CLI on real SQLite files and a real `pemba serve` (--url): round trips,
 * a kill -9 at several points of an import resumed from its checkpoint, damaged files refused before any write,
 * line errors, dry runs, gzip, stdin, and the migration sources on real files.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { DumpWriter, headerLine, PembaService, schemaLine } from "@pemba/core";
import { SqliteStore } from "@pemba/core/node";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO_DIR, runCli, startCli, startServe } from "../src/testing/cli-process.ts";

const SCHEMA = `entity user {}
entity team {
  relation member @user
}
entity doc {
  relation owner @user
  relation viewer @user @team#member
  attribute public boolean
  attribute level integer
  permission view = owner or viewer
}
`;

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "pemba-dump-cli-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A SQLite file's indexes (name and definition), and those an import into it dropped and has not built yet. */
function indexesOf(file: string): { live: { name: string; sql: string }[]; deferred: string[] } {
  const db = new Database(file, { readonly: true });
  try {
    const deferred =
      db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'pemba_deferred_indexes'").get() === undefined
        ? []
        : (db.prepare("SELECT name FROM pemba_deferred_indexes ORDER BY name").all() as { name: string }[]);
    const live = db
      .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name")
      .all() as { name: string; sql: string }[];
    return { live, deferred: deferred.map((r) => r.name) };
  } finally {
    db.close();
  }
}

/** A dump of `n` rows (every tenth an attribute, some with expiry or a subject relation), as the writer makes it. */
function writeDump(path: string, n: number): void {
  const w = new DumpWriter();
  const parts: Uint8Array[] = [
    w.header(
      headerLine({ tenant: "src", schema_version: "v1", snap_token: "", created_at: "2030-01-01T00:00:00Z" }),
    ),
  ];
  const push = (b: Uint8Array | undefined) => b && parts.push(b);
  push(w.line(schemaLine({ version: "v1", text: SCHEMA })));
  for (let i = 0; i < n; i++) {
    if (i % 10 === 9) {
      push(
        w.attribute({
          entity: { type: "doc", id: `d${i}` },
          attribute: i % 20 === 9 ? "public" : "level",
          value:
            i % 20 === 9
              ? { type: "ATTRIBUTE_TYPE_BOOLEAN", data: true }
              : { type: "ATTRIBUTE_TYPE_INTEGER", data: i },
        }),
      );
      continue;
    }
    const subject =
      i % 7 === 0
        ? { type: "team", id: `t${i % 50}`, relation: "member" }
        : { type: "user", id: `u${i}`, relation: "" };
    push(
      w.tuple({
        entity: { type: "doc", id: `d${i >> 2}` },
        relation: "viewer",
        subject,
        ...(i % 13 === 0 ? { expiresAt: Date.UTC(2031, 0, 1) + i } : {}),
      }),
    );
  }
  parts.push(w.finish());
  writeFileSync(path, Buffer.concat(parts));
}

const withoutHeader = (text: string) => text.split("\n").slice(1).join("\n");
const cli = (...args: string[]) => runCli(args);

describe("pemba export / import", () => {
  it("round trip: import -> export -> import into another file -> export gives the same bytes but the header", async () => {
    const src = join(dir, "rt.ndjson");
    writeDump(src, 3000);
    const a = join(dir, "rt-a.db");
    const first = await cli("import", "--database", a, "--tenant", "acme", src);
    expect(first.stderr).not.toContain("pemba:");
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(
      /^imported into tenant acme: 2700 tuples, 300 attributes \(3000 written, 0 unchanged, 0 errors\); snap token \S+;/,
    );
    const exportA = join(dir, "rt-a.ndjson");
    const e1 = await cli("export", "--database", a, "--tenant", "acme", "-o", exportA);
    expect(e1.code).toBe(0);
    expect(e1.stderr).toMatch(/^exported tenant acme: 2700 tuples, 300 attributes at snap token \S+ in/);
    const b = join(dir, "rt-b.db");
    expect((await cli("import", "--database", b, "--tenant", "acme", exportA)).code).toBe(0);
    const exportB = join(dir, "rt-b.ndjson.gz");
    expect((await cli("export", "--database", b, "--tenant", "acme", "-o", exportB)).code).toBe(0);
    const textA = readFileSync(exportA, "utf8");
    const textB = gunzipSync(readFileSync(exportB)).toString("utf8");
    expect(withoutHeader(textB)).toBe(withoutHeader(textA));
    expect(textB.split("\n")[0]).not.toBe(textA.split("\n")[0]);
    // a re-run of the same file changes nothing
    const again = await cli("import", "--database", b, "--tenant", "acme", exportB);
    expect(again.stdout).toMatch(
      /2700 tuples, 300 attributes \(0 written, 3000 unchanged, 0 errors\); snap token \(none: nothing written\)/,
    );
    // stdout export and stdin import
    const out = spawnSync(
      process.execPath,
      [join(REPO_DIR, "packages/node-server/dist/pemba.mjs"), "export", "--database", b, "--tenant", "acme"],
      {
        encoding: "utf8",
      },
    );
    expect(withoutHeader(out.stdout)).toBe(withoutHeader(textA));
    const c = join(dir, "rt-c.db");
    const piped = spawnSync(
      process.execPath,
      [
        join(REPO_DIR, "packages/node-server/dist/pemba.mjs"),
        "import",
        "--database",
        c,
        "--tenant",
        "acme",
        "-",
      ],
      { input: readFileSync(exportB), encoding: "utf8" },
    );
    expect(piped.status).toBe(0);
    expect(piped.stdout).toContain("3000 written");
    // not a terminal: progress is a line every few seconds, and the last one at 100 %
    expect(piped.stderr.trim().split("\n").at(-1)).toMatch(/^import: 3,000 rows, [\d,]+ rows\/s, 0 errors$/);
  });

  it("kill -9 at several points of an import: each re-run resumes from the checkpoint and the end has exactly the source's rows", async () => {
    const src = join(dir, "kill.ndjson");
    writeDump(src, 40_000);
    const db = join(dir, "kill.db");
    const checkpoint = `${src}.checkpoint`;
    const lines: number[] = [];
    const deferred: string[][] = [];
    for (const after of [2_000, 12_000, 25_000]) {
      const proc = startCli(["import", "--database", db, "--chunk-rows", "500", src]);
      for (;;) {
        await new Promise((r) => setTimeout(r, 20));
        const line = existsSync(checkpoint)
          ? (JSON.parse(readFileSync(checkpoint, "utf8")) as { line: number }).line
          : 0;
        if (line >= after || proc.child.exitCode !== null) break;
      }
      proc.child.kill("SIGKILL");
      const done = await proc.exited;
      expect(done.signal).toBe("SIGKILL");
      lines.push((JSON.parse(readFileSync(checkpoint, "utf8")) as { line: number }).line);
      deferred.push(indexesOf(db).deferred);
    }
    expect(lines[0]!).toBeLessThan(lines[2]!);
    // the first run found the file empty and loaded it without its non-unique indexes (their definitions kept in
    // the file); the second run's open built them, so it and the third ran with every index
    expect(deferred[0]).toEqual([
      "attributes_created_idx",
      "attributes_deleted_idx",
      "attributes_entity_idx",
      "attributes_expires_idx",
      "tuples_created_idx",
      "tuples_deleted_idx",
      "tuples_entity_idx",
      "tuples_expires_idx",
      "tuples_subject_idx",
    ]);
    expect(deferred.slice(1)).toEqual([[], []]);
    const last = await cli("import", "--database", db, "--chunk-rows", "500", src);
    expect(last.code).toBe(0);
    expect(last.stderr).toContain(`resuming after line ${lines[2]}`);
    expect(last.stdout).toMatch(/^imported into tenant t1: 36000 tuples, 4000 attributes/);
    expect(existsSync(checkpoint)).toBe(false);
    const exported = join(dir, "kill-out.ndjson");
    expect((await cli("export", "--database", db, "-o", exported)).code).toBe(0);
    const reference = join(dir, "kill-ref.db");
    expect((await cli("import", "--database", reference, src)).code).toBe(0);
    const refOut = join(dir, "kill-ref.ndjson");
    expect((await cli("export", "--database", reference, "-o", refOut)).code).toBe(0);
    const rows = (f: string) => readFileSync(f, "utf8").split("\n").slice(2, -2).sort();
    expect(rows(exported)).toEqual(rows(refOut));
    expect(rows(exported)).toHaveLength(40_000);
    // both files end with every index the migrations create, as a file with no import has them
    const fresh = join(dir, "kill-fresh.db");
    await SqliteStore.open(fresh).close();
    const expected = indexesOf(fresh);
    expect(expected.live.length).toBeGreaterThan(9);
    expect(indexesOf(db)).toEqual(expected);
    expect(indexesOf(reference)).toEqual(expected);
    const store = SqliteStore.open(db);
    try {
      expect(await store.countTuples("t1", await store.headSnap("t1"), {}, 0)).toBe(36_000);
    } finally {
      await store.close();
    }
  });

  it("a truncated or altered file is refused naming the line, before anything is written", async () => {
    const src = join(dir, "bad.ndjson");
    writeDump(src, 100);
    const text = readFileSync(src, "utf8");
    const lines = text.split("\n");
    const truncated = join(dir, "truncated.ndjson");
    writeFileSync(truncated, `${lines.slice(0, 50).join("\n")}\n`);
    const db = join(dir, "bad.db");
    const t = await cli("import", "--database", db, truncated);
    expect(t.code).toBe(1);
    expect(t.stderr).toBe(
      "pemba: line 50: the file ends without its trailer: the dump is truncated after this line [ERROR_CODE_VALIDATION]\n",
    );
    const corrupt = join(dir, "corrupt.ndjson");
    writeFileSync(corrupt, text.replace('"entity_id":"d3"', '"entity_id":"d3'));
    const c = await cli("import", "--database", db, corrupt);
    expect(c.stderr).toMatch(/^pemba: line (\d+): not a JSON line: the file is corrupt/);
    const altered = join(dir, "altered.ndjson");
    writeFileSync(altered, text.replace('"entity_id":"d3"', '"entity_id":"d4"'));
    const a = await cli("import", "--database", db, altered);
    expect(a.stderr).toMatch(
      /^pemba: line 103: checksum mismatch \(trailer [0-9a-f]{8}, lines [0-9a-f]{8}\): the file was altered/,
    );
    expect(existsSync(db)).toBe(false);
  });

  it("line errors go to the report file; --max-errors stops the import; --dry-run writes nothing", async () => {
    const src = join(dir, "errors.ndjson");
    const w = new DumpWriter();
    const parts = [
      w.header(
        headerLine({
          tenant: "src",
          schema_version: "v1",
          snap_token: "",
          created_at: "2030-01-01T00:00:00Z",
        }),
      ),
      w.line(schemaLine({ version: "v1", text: SCHEMA })),
      w.tuple({
        entity: { type: "doc", id: "1" },
        relation: "owner",
        subject: { type: "user", id: "a", relation: "" },
      }),
      w.tuple({
        entity: { type: "doc", id: "1" },
        relation: "editor",
        subject: { type: "user", id: "a", relation: "" },
      }),
      w.attribute({
        entity: { type: "doc", id: "1" },
        attribute: "public",
        value: { type: "ATTRIBUTE_TYPE_STRING", data: "x" },
      }),
      w.finish(),
    ].filter((x): x is Uint8Array => x !== undefined);
    writeFileSync(src, Buffer.concat(parts));
    const report = join(dir, "errors.report");
    const db = join(dir, "errors.db");
    const dry = await cli(
      "import",
      "--database",
      db,
      "--dry-run",
      "--max-errors",
      "5",
      "--errors",
      report,
      src,
    );
    expect(dry.code).toBe(0);
    expect(dry.stdout).toMatch(
      /^checked \(dry run, nothing written\) into tenant t1: 2 tuples, 1 attributes \(1 written, 0 unchanged, 2 errors\)/,
    );
    expect(
      readFileSync(report, "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l)),
    ).toEqual([
      {
        line: 4,
        code: "ERROR_CODE_RELATION_DEFINITION_NOT_FOUND",
        message: "ERROR_CODE_RELATION_DEFINITION_NOT_FOUND",
      },
      { line: 5, code: "ERROR_CODE_ATTRIBUTE_TYPE_MISMATCH", message: "ERROR_CODE_ATTRIBUTE_TYPE_MISMATCH" },
    ]);
    const store = SqliteStore.open(db);
    expect(await store.headSchema("t1")).toBeUndefined();
    await store.close();
    const stop = await cli("import", "--database", db, "--errors", report, src);
    expect(stop.code).toBe(1);
    expect(stop.stderr).toContain(
      "line 4: ERROR_CODE_RELATION_DEFINITION_NOT_FOUND; 1 line error(s), more than --max-errors 0",
    );
    const ok = await cli("import", "--database", db, "--max-errors", "2", src);
    expect(ok.stdout).toContain("2 tuples, 1 attributes (1 written, 0 unchanged, 2 errors)");
  });

  it("--url: an import in several requests (resumable by offset) and an export streamed by a running server", async () => {
    const src = join(dir, "http.ndjson");
    writeDump(src, 5000);
    const server = await startServe(["--database", join(dir, "http.db")]);
    try {
      const imported = await cli("import", "--url", server.url, "--request-bytes", "60000", src);
      expect(imported.stderr).not.toContain("pemba:");
      expect(imported.stdout).toMatch(
        /^imported into tenant t1 at http:\S+: 4500 tuples, 500 attributes \(5000 written, 0 unchanged, 0 errors\); snap token \S+;/,
      );
      const out = join(dir, "http-out.ndjson");
      const exported = await cli("export", "--url", server.url, "-o", out);
      expect(exported.code).toBe(0);
      const local = join(dir, "http-local.db");
      expect((await cli("import", "--database", local, src)).code).toBe(0);
      const localOut = join(dir, "http-local.ndjson");
      expect((await cli("export", "--database", local, "-o", localOut)).code).toBe(0);
      expect(withoutHeader(readFileSync(out, "utf8"))).toBe(withoutHeader(readFileSync(localOut, "utf8")));
      const again = await cli("import", "--url", server.url, "--request-bytes", "60000", src);
      expect(again.stdout).toContain("(0 written, 5000 unchanged, 0 errors)");
    } finally {
      server.child.kill("SIGTERM");
      await server.exited;
    }
  });
});

describe("pemba import --from", () => {
  it("permify-validation: a Permify validation file's schema, relationships and attributes", async () => {
    const file = join(REPO_DIR, "../shared/conformance/permify/shapes/banking-system.yaml");
    const db = join(dir, "permify-validation.db");
    const r = await cli("import", "--database", db, "--from", "permify-validation", file);
    expect(r.stderr).not.toContain("pemba:");
    expect(r.stdout).toMatch(
      /^imported into tenant t1: 2 tuples, 1 attributes \(3 written, 0 unchanged, 0 errors\)/,
    );
    const store = SqliteStore.open(db);
    try {
      const service = new PembaService(store);
      const check = await service.check(
        "t1",
        { schemaVersion: "", snapToken: "", depth: 20 },
        {
          entity: { type: "account", id: "1" },
          permission: "withdraw",
          subject: { type: "user", id: "andrew", relation: "" },
        },
        { tuples: [], attributes: [], data: { amount: 3000 } },
      );
      expect(check).toMatchObject({ can: "CHECK_RESULT_ALLOWED" });
    } finally {
      await store.close();
    }
  });

  const FGA_SCHEMA = `entity user {}
entity team {
  relation member @user
}
entity document {
  relation reader @user @team#member
  relation owner @user
}
`;

  it("openfga: store export YAML, CSV, JSON and JSONL tuples with declared rewrites", async () => {
    writeFileSync(join(dir, "fga.perm"), FGA_SCHEMA);
    writeFileSync(
      join(dir, "store.fga.yaml"),
      `name: demo
model: |
  model
    schema 1.1
  type user
  type group
    relations
      define member: [user]
  type document
    relations
      define viewer: [user, group#member]
      define owner: [user]
tuples:
  - user: user:anne
    relation: viewer
    object: document:1
  - user: group:eng#member
    relation: viewer
    object: document:1
  - user: user:bob
    relation: member
    object: group:eng
  - user: user:anne
    relation: owner
    object: document:2
`,
    );
    writeFileSync(
      join(dir, "tuples.csv"),
      "user_type,user_id,user_relation,relation,object_type,object_id,condition_name,condition_context\nuser,anne,,viewer,document,1,,\ngroup,eng,member,viewer,document,1,,\n",
    );
    writeFileSync(
      join(dir, "tuples.jsonl"),
      '{"user":"user:anne","relation":"viewer","object":"document:1"}\n',
    );
    writeFileSync(
      join(dir, "tuples.json"),
      JSON.stringify([{ user: "user:carl", relation: "owner", object: "document:3" }]),
    );
    const rewrites = ["--rewrite", "type:group=team", "--rewrite", "relation:document#viewer=reader"];
    const db = join(dir, "fga.db");
    const common = ["--database", db, "--from", "openfga", "--schema", join(dir, "fga.perm"), ...rewrites];
    const yaml = await cli("import", ...common, join(dir, "store.fga.yaml"));
    expect(yaml.stderr).not.toContain("pemba:");
    expect(yaml.stdout).toMatch(
      /^imported into tenant t1: 4 tuples, 0 attributes \(4 written, 0 unchanged, 0 errors\)/,
    );
    const csv = await cli("import", ...common, join(dir, "tuples.csv"));
    expect(csv.stdout).toMatch(/2 tuples, 0 attributes \(0 written, 2 unchanged, 0 errors\)/);
    const jsonl = await cli("import", ...common, join(dir, "tuples.jsonl"));
    expect(jsonl.stdout).toMatch(/1 tuples, 0 attributes \(0 written, 1 unchanged, 0 errors\)/);
    const json = await cli("import", ...common, join(dir, "tuples.json"));
    expect(json.stdout).toMatch(/1 tuples, 0 attributes \(1 written, 0 unchanged, 0 errors\)/);
    const out = join(dir, "fga.ndjson");
    await cli("export", "--database", db, "-o", out);
    const rows = readFileSync(out, "utf8")
      .split("\n")
      .slice(2, -2)
      .map((l) => JSON.parse(l));
    expect(rows).toContainEqual({
      type: "tuple",
      entity_type: "document",
      entity_id: "1",
      relation: "reader",
      subject_type: "team",
      subject_id: "eng",
      subject_relation: "member",
    });
    expect(rows).toHaveLength(5);
  });

  it("openfga: a condition or a wildcard stops the import before writing, naming each", async () => {
    writeFileSync(join(dir, "fga.perm"), FGA_SCHEMA);
    writeFileSync(
      join(dir, "conditional.jsonl"),
      [
        '{"user":"user:anne","relation":"reader","object":"document:1"}',
        '{"user":"user:*","relation":"reader","object":"document:2"}',
        '{"user":"user:bob","relation":"reader","object":"document:3","condition":{"name":"in_office_hours"}}',
      ].join("\n"),
    );
    const db = join(dir, "fga-bad.db");
    const r = await cli(
      "import",
      "--database",
      db,
      "--from",
      "openfga",
      "--schema",
      join(dir, "fga.perm"),
      join(dir, "conditional.jsonl"),
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("the source holds 2 thing(s) Pemba cannot represent; nothing was written:");
    expect(r.stderr).toContain("conditional.jsonl:2: the public wildcard user:*");
    expect(r.stderr).toContain(
      'conditional.jsonl:3: condition "in_office_hours" on document:3#reader@user:bob',
    );
    expect(existsSync(db)).toBe(false);
  });

  it("zed-backup: a real `zed backup` file (Avro, Snappy) with its expiration, under the declared schema", async () => {
    const fixtures = join(REPO_DIR, "packages/node-server/test/fixtures/zed-backup");
    writeFileSync(
      join(dir, "zed.perm"),
      `entity user {}
entity team {
  relation member @user
}
entity document {
  relation owner @user
  relation viewer @user @team#member
  permission view = owner or viewer
}
`,
    );
    const db = join(dir, "zed.db");
    const common = ["--database", db, "--from", "zed-backup", "--schema", join(dir, "zed.perm")];
    const first = await cli("import", ...common, join(fixtures, "plain.zedbackup"));
    expect(first.stderr).not.toContain("pemba:");
    expect(first.stdout).toMatch(
      /^imported into tenant t1: 5 tuples, 0 attributes \(5 written, 0 unchanged, 0 errors\)/,
    );
    const again = await cli("import", ...common, join(fixtures, "plain.zedbackup"));
    expect(again.stdout).toMatch(/5 tuples, 0 attributes \(0 written, 5 unchanged, 0 errors\)/);
    const out = join(dir, "zed.ndjson");
    await cli("export", "--database", db, "-o", out);
    const rows = readFileSync(out, "utf8")
      .split("\n")
      .slice(2, -2)
      .map((l) => JSON.parse(l));
    const tuple = (e: string, r: string, s: string, extra: Record<string, string> = {}) => {
      const [et, eid] = e.split(":");
      const [subject, sr] = s.split("#");
      const [st, sid] = subject!.split(":");
      return {
        type: "tuple",
        entity_type: et,
        entity_id: eid,
        relation: r,
        subject_type: st,
        subject_id: sid,
        ...(sr ? { subject_relation: sr } : {}),
        ...extra,
      };
    };
    expect(rows).toEqual([
      tuple("document:1", "owner", "user:alice"),
      tuple("document:1", "viewer", "team:eng#member"),
      tuple("document:2", "viewer", "user:bob", { expires_at: "2031-01-02T03:04:05.000Z" }),
      tuple("team:eng", "member", "user:carol"),
      tuple("document:doc-3_x", "viewer", "user:dave"),
    ]);
  });

  it("zed-backup: a caveat or an id Pemba cannot store stops the import before writing, naming each", async () => {
    const fixtures = join(REPO_DIR, "packages/node-server/test/fixtures/zed-backup");
    writeFileSync(
      join(dir, "zed-caveat.perm"),
      "entity user {}\nentity document {\n  relation viewer @user\n}\n",
    );
    const db = join(dir, "zed-caveat.db");
    const file = join(fixtures, "caveated.zedbackup");
    const r = await cli(
      "import",
      "--database",
      db,
      "--from",
      "zed-backup",
      "--schema",
      join(dir, "zed-caveat.perm"),
      file,
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("the source holds 2 thing(s) Pemba cannot represent; nothing was written:");
    expect(r.stderr).toContain(
      `${file}: relationship 2 (document:folder/a#viewer@user:grace): id "folder/a" has characters Pemba's ids do not allow`,
    );
    expect(r.stderr).toContain(
      `${file}: relationship 3 (document:1#viewer@user:erin): caveat "on_weekdays" with context {"day":"monday"}`,
    );
    expect(existsSync(db)).toBe(false);
    // without --schema: the import says what it needs
    const noSchema = await cli("import", "--database", db, "--from", "zed-backup", file);
    expect(noSchema.code).not.toBe(0);
    expect(noSchema.stderr).toContain("--from zed-backup needs --schema <file.perm>");
  });
});
