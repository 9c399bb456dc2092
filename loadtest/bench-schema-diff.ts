/**
 * Schema diff benchmark: Permify's load-test schema and seed dataset (100,000 ids = 600,000 tuples +
 * 200,000 attributes) in a SQLite file, diffed against schema changes that orphan rows and flip decisions.
 *
 *   node loadtest/bench-schema-diff.ts [--ids 100000] [--runs 3] [--sample 10000] [--db loadtest/out/diff-100000.db]
 *
 * The SQLite file is built once (kept, git-ignored) and reused. Measures, per change, the wall and CPU time of the
 * diff (median of --runs; CPU = process.cpuUsage, steadier than wall time on a shared machine) on: SQLite (what
 * `pemba schema diff --database` runs), SQLite behind the in-memory replica (what POST /schemas/diff runs in
 * `pemba serve`), and the whole `pemba schema diff --database` process (bundled CLI, start to exit, CPU by
 * /usr/bin/time). Prints what each diff found, so the figures are of real work, and the load average.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { orphanedRows, PembaService, ReplicaStore, type SchemaDiffReport, type Store } from "@pemba/core";
import { SqliteStore } from "@pemba/core/node";
import { LOAD_TEST_SCHEMA, loadTestData } from "@pemba/core/testing";

const { values } = parseArgs({
  options: {
    ids: { type: "string", default: "100000" },
    runs: { type: "string", default: "3" },
    sample: { type: "string", default: "5000" },
    db: { type: "string" },
  },
});
const IDS = Number(values.ids);
const RUNS = Number(values.runs);
const SAMPLE = Number(values.sample);
const REPO = resolve(import.meta.dirname, "..");
const DB = resolve(values.db ?? join(REPO, "loadtest/out", `diff-${IDS}.db`));
const CLI = join(REPO, "packages/node-server/dist/pemba.mjs");

/** The changes diffed: each orphans rows and flips decisions in its own way. */
const CHANGES: Record<string, string> = {
  "drop user.blocked": LOAD_TEST_SCHEMA.replace("  relation blocked @user\n", "")
    .replace(
      "permission view = self or (is_public or follower) not blocked",
      "permission view = self or (is_public or follower)",
    )
    .replace(
      "permission view = owner.self or (is_public or owner.follower) not owner.blocked",
      "permission view = owner.self or (is_public or owner.follower)",
    ),
  "drop content.is_public": LOAD_TEST_SCHEMA.replace(
    "entity content {\n  relation owner @user\n  attribute is_public boolean\n",
    "entity content {\n  relation owner @user\n",
  ).replace(
    "permission view = owner.self or (is_public or owner.follower) not owner.blocked",
    "permission view = owner.self or owner.follower not owner.blocked",
  ),
  "drop entity interaction": LOAD_TEST_SCHEMA.replace(/\n\nentity interaction \{[\s\S]*\}$/, ""),
};

async function build(): Promise<void> {
  if (existsSync(DB)) return;
  mkdirSync(dirname(DB), { recursive: true });
  const started = performance.now();
  const store = SqliteStore.open(`${DB}.tmp`);
  const service = new PembaService(store);
  const version = await service.writeSchema("t1", LOAD_TEST_SCHEMA);
  const { tuples, attributes } = loadTestData(IDS);
  for (let i = 0; i < tuples.length; i += 1000)
    await service.writeData("t1", version, tuples.slice(i, i + 1000), []);
  for (let i = 0; i < attributes.length; i += 1000)
    await service.writeData("t1", version, [], attributes.slice(i, i + 1000));
  await store.close();
  spawnSync("mv", [`${DB}.tmp`, DB]);
  console.log(
    `built ${DB}: ${tuples.length + attributes.length} rows in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function found(r: SchemaDiffReport): string {
  const flips = r.permissions
    .map(
      (p) =>
        `${p.entity}.${p.permission} ${p.allowedToDenied}/${p.deniedToAllowed} of ${p.checked}${p.sampled ? " sampled" : ""}`,
    )
    .join(", ");
  return `orphans ${orphanedRows(r)} rows; flips (allowed->denied/denied->allowed) ${flips || "none"}`;
}

async function timeDiffs(label: string, store: Store): Promise<void> {
  const service = new PembaService(store);
  for (const [name, schema] of Object.entries(CHANGES)) {
    const times: number[] = [];
    const cpus: number[] = [];
    let report: SchemaDiffReport | undefined;
    for (let i = 0; i < RUNS; i++) {
      const t0 = performance.now();
      const c0 = process.cpuUsage();
      report = (
        await service.diffSchema("t1", { baseVersion: "", schema, snapToken: "", sampleSize: SAMPLE })
      ).report;
      const c = process.cpuUsage(c0);
      times.push(performance.now() - t0);
      cpus.push((c.user + c.system) / 1000);
    }
    console.log(
      `${label.padEnd(18)} ${name.padEnd(24)} CPU median ${median(cpus).toFixed(0).padStart(5)} ms, wall ${median(times).toFixed(0).padStart(5)} ms (runs CPU/wall: ${cpus.map((c, i) => `${c.toFixed(0)}/${times[i]!.toFixed(0)}`).join(", ")}); ${found(report!)}`,
    );
  }
}

await build();
console.log(
  `load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")} on ${availableParallelism()} CPUs`,
);
console.log(
  `dataset: ${IDS} ids (${IDS * 8} rows), sample ${SAMPLE} pairs per changed permission, ${RUNS} runs each`,
);

const sqlite = SqliteStore.open(DB);
await timeDiffs("sqlite", sqlite);
await sqlite.close();

const t0 = performance.now();
const replica = await ReplicaStore.open(SqliteStore.open(DB), { refreshMs: 0 });
console.log(
  `replica loaded in ${(performance.now() - t0).toFixed(0)} ms (once, at server start; not part of a diff)`,
);
await timeDiffs("sqlite + replica", replica);
await replica.close();

if (existsSync(CLI)) {
  const dir = mkdtempSync(join(tmpdir(), "pemba-bench-diff-"));
  writeFileSync(join(dir, "old.perm"), LOAD_TEST_SCHEMA);
  for (const [name, schema] of Object.entries(CHANGES)) {
    writeFileSync(join(dir, "new.perm"), schema);
    const times: number[] = [];
    const cpus: number[] = [];
    let out = "";
    for (let i = 0; i < RUNS; i++) {
      const args = [
        CLI,
        "schema",
        "diff",
        "old.perm",
        "new.perm",
        "--database",
        DB,
        "--sample",
        String(SAMPLE),
      ];
      const r = spawnSync("/usr/bin/time", ["-f", "TIME %e %U %S", process.execPath, ...args], {
        cwd: dir,
        encoding: "utf8",
      });
      const [wall, user, sys] = (/TIME ([\d.]+) ([\d.]+) ([\d.]+)/.exec(r.stderr) ?? []).slice(1).map(Number);
      times.push(wall! * 1000);
      cpus.push((user! + sys!) * 1000);
      out = r.stdout;
      if (r.status !== 1) throw new Error(`pemba schema diff exited ${r.status}: ${r.stderr}`);
    }
    const inner = /diffed in ([\d.]+) ms/.exec(out)?.[1];
    console.log(
      `${"pemba schema diff".padEnd(18)} ${name.padEnd(24)} CPU median ${median(cpus).toFixed(0).padStart(5)} ms, wall ${median(times).toFixed(0).padStart(5)} ms, process start to exit (runs CPU/wall: ${cpus.map((c, i) => `${c.toFixed(0)}/${times[i]!.toFixed(0)}`).join(", ")}; wall of the diff itself ${inner} ms in the last)`,
    );
  }
  rmSync(dir, { recursive: true, force: true });
} else {
  console.log(`(no ${CLI}: run \`pnpm pemba --version\` once to bundle the CLI for the process timing)`);
}
console.log(
  `load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")} at the end`,
);
