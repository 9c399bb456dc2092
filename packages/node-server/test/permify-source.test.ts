/**
 * `pemba import --from permify` against a real Permify v1.7.3 server (its binary in PEMBA_PERMIFY_BIN, built from
 * Permify's public source). Permify binds every interface, so it runs in a private network namespace (`unshare -n`,
 * loopback only) together with the seeding and the `pemba import` that reads it; nothing else can reach it. Without
 * the binary the test is skipped and says "real Permify NOT verified". Permify runs on its memory engine here,
 * which reads its current rows whatever the snap token (its PostgreSQL engine reads at the token's snapshot).
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { REPO_DIR } from "../src/testing/cli-process.ts";

const PERMIFY = process.env.PEMBA_PERMIFY_BIN ?? "";
const available = PERMIFY !== "" && existsSync(PERMIFY);
if (!available)
  console.warn(
    "permify-source.test.ts: real Permify NOT verified (set PEMBA_PERMIFY_BIN to a Permify v1.7.3 binary)",
  );

const SCHEMA = `entity user {}

entity team {
  relation member @user
}

entity doc {
  relation owner @user
  relation viewer @user @team#member
  relation parent @doc
  attribute public boolean
  attribute level integer
  attribute tags string[]
  permission view = (owner or viewer or parent.view) not blocked
  permission blocked = owner and viewer
  permission open = public or level_ok(level)
}

rule level_ok(level integer) {
  level > context.data.min
}
`;

const TUPLES = [
  ["doc", "1", "owner", "user", "alice", ""],
  ["doc", "1", "viewer", "team", "eng", "member"],
  ["doc", "2", "parent", "doc", "1", ""],
  ["team", "eng", "member", "user", "bob", ""],
];
/** 100 more (Permify's default limit per write), so the doc tuples take two pages of 100. */
const MORE = Array.from({ length: 100 }, (_, i) => ["doc", `p${i}`, "viewer", "user", `u${i}`, ""]);

const dir = mkdtempSync(join(tmpdir(), "pemba-permify-src-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("pemba import --from permify", () => {
  it.skipIf(!available)(
    `reads a real Permify v1.7.3 over HTTP: schema, relationships and attributes, paged, with its snap token${available ? "" : " (real Permify NOT verified: no PEMBA_PERMIFY_BIN)"}`,
    () => {
      const cli = join(REPO_DIR, "packages/node-server/dist/pemba.mjs");
      const db = join(dir, "from-permify.db");
      const out = join(dir, "from-permify.ndjson");
      const write = {
        metadata: { schema_version: "" },
        tuples: TUPLES.map(([et, eid, r, st, sid, sr]) => ({
          entity: { type: et, id: eid },
          relation: r,
          subject: { type: st, id: sid, relation: sr },
        })),
        attributes: [
          {
            entity: { type: "doc", id: "1" },
            attribute: "public",
            value: { "@type": "type.googleapis.com/base.v1.BooleanValue", data: true },
          },
          {
            entity: { type: "doc", id: "2" },
            attribute: "level",
            value: { "@type": "type.googleapis.com/base.v1.IntegerValue", data: 7 },
          },
          {
            entity: { type: "doc", id: "2" },
            attribute: "tags",
            value: { "@type": "type.googleapis.com/base.v1.StringArrayValue", data: ["a", "b c"] },
          },
        ],
      };
      writeFileSync(join(dir, "schema.json"), JSON.stringify({ schema: SCHEMA }));
      writeFileSync(join(dir, "write.json"), JSON.stringify(write));
      writeFileSync(
        join(dir, "more.json"),
        JSON.stringify({
          metadata: { schema_version: "" },
          tuples: MORE.map(([et, eid, r, st, sid]) => ({
            entity: { type: et, id: eid },
            relation: r,
            subject: { type: st, id: sid },
          })),
        }),
      );
      // everything that talks to Permify runs inside the namespace; the script prints the snap token it read at
      const script = `set -e
ip link set lo up
"${PERMIFY}" serve --http-port 3476 --grpc-port 3478 > "${dir}/permify.log" 2>&1 &
P=$!
trap 'kill $P' EXIT
for i in $(seq 1 100); do curl -sf http://127.0.0.1:3476/healthz > /dev/null && break; sleep 0.2; done
curl -sf -XPOST http://127.0.0.1:3476/v1/tenants/t1/schemas/write -d @"${dir}/schema.json" > /dev/null
curl -sf -XPOST http://127.0.0.1:3476/v1/tenants/t1/data/write -d @"${dir}/more.json" > /dev/null
TOKEN=$(curl -sf -XPOST http://127.0.0.1:3476/v1/tenants/t1/data/write -d @"${dir}/write.json" | sed -E 's/.*"snap_token":"([^"]*)".*/\\1/')
echo "token $TOKEN"
"${process.execPath}" "${cli}" import --database "${db}" --tenant copy --from permify "http://127.0.0.1:3476?tenant=t1&snap_token=$TOKEN"
# a re-run reads the same rows and changes nothing
"${process.execPath}" "${cli}" import --database "${db}" --tenant copy --from permify "http://127.0.0.1:3476?tenant=t1&snap_token=$TOKEN"
`;
      writeFileSync(join(dir, "run.sh"), script);
      const r = spawnSync("unshare", ["-n", "bash", join(dir, "run.sh")], {
        encoding: "utf8",
        timeout: 120_000,
      });
      expect(r.stderr).not.toContain("pemba:");
      expect(r.status).toBe(0);
      const printed = r.stdout.split("\n");
      expect(printed[0]).toMatch(/^token \S+=*$/);
      expect(printed[1]).toMatch(
        /^imported into tenant copy: 104 tuples, 3 attributes \(107 written, 0 unchanged, 0 errors\)/,
      );
      expect(printed[2]).toMatch(/104 tuples, 3 attributes \(0 written, 107 unchanged, 0 errors\)/);
      const e = spawnSync(
        process.execPath,
        [cli, "export", "--database", db, "--tenant", "copy", "-o", out],
        {
          encoding: "utf8",
        },
      );
      expect(e.status).toBe(0);
      const lines = readFileSync(out, "utf8").trimEnd().split("\n");
      const schema = JSON.parse(lines[1]!).text as string;
      // the schema comes back from Permify's definition (no text in schemas/read), rule body included
      expect(schema).toContain("rule level_ok(level integer) {\n  (level > context.data.min)\n}");
      expect(schema).toContain("permission view = ((owner or viewer) or parent.view) not blocked");
      expect(schema).toContain("relation viewer @user @team#member");
      const rows = lines.slice(2, -1).map((l) => JSON.parse(l));
      const tuples = rows.filter((x) => x.type === "tuple");
      expect(
        tuples
          .map((t) => [
            t.entity_type,
            t.entity_id,
            t.relation,
            t.subject_type,
            t.subject_id,
            t.subject_relation ?? "",
          ])
          .sort(),
      ).toEqual([...TUPLES, ...MORE].sort());
      expect(rows.filter((x) => x.type === "attribute")).toEqual([
        {
          type: "attribute",
          entity_type: "doc",
          entity_id: "1",
          attribute: "public",
          value_type: "ATTRIBUTE_TYPE_BOOLEAN",
          value: true,
        },
        {
          type: "attribute",
          entity_type: "doc",
          entity_id: "2",
          attribute: "level",
          value_type: "ATTRIBUTE_TYPE_INTEGER",
          value: 7,
        },
        {
          type: "attribute",
          entity_type: "doc",
          entity_id: "2",
          attribute: "tags",
          value_type: "ATTRIBUTE_TYPE_STRING_ARRAY",
          value: ["a", "b c"],
        },
      ]);
    },
    180_000,
  );
});
