/**
 * What a second subject index costs SQLite's 1,000-row writes: the same writes into one tenant of a fresh SQLite
 * file as shipped (one subject index; migration 0006 dropped the page index) and with the subject page
 * index `(tenant_id, subject_type, subject_id, id)` created again, alternating, at the store (no server). Each write
 * gives one entity 1,000 subjects, as loadtest/bench-writes.ts does. Prints the mean time per write after the first
 * 5, per round.
 *   node --experimental-strip-types --no-warnings packages/core/scripts/sqlite-bulk-index.ts [rounds=3] [writes=100]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { SqliteStore } from "../src/store/drivers/sqlite.ts";

const [rounds = 3, writes = 100] = process.argv.slice(2).map(Number);
const means: Record<"with" | "without", string[]> = { with: [], without: [] };
const PAGE_INDEX = "CREATE INDEX tuples_subject_page_idx ON tuples (tenant_id, subject_type, subject_id, id)";
for (let round = 0; round < rounds; round++) {
  for (const mode of ["with", "without"] as const) {
    const dir = mkdtempSync(join(tmpdir(), "pemba-sqlite-bulk-"));
    const file = join(dir, "pemba.db");
    const store = SqliteStore.open(file);
    if (mode === "with") {
      const db = new Database(file);
      db.exec(PAGE_INDEX);
      db.close();
    }
    await store.createTenant("t", "t");
    let ms = 0;
    for (let w = 0; w < writes; w++) {
      const tuples = Array.from({ length: 1000 }, (_, r) => ({
        entity: { type: "doc", id: `d${w}` },
        relation: "viewer",
        subject: { type: "user", id: String(r), relation: "" },
      }));
      const started = performance.now();
      await store.write("t", { tuples });
      if (w >= 5) ms += performance.now() - started;
    }
    means[mode].push((ms / (writes - 5)).toFixed(1));
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
for (const [mode, list] of Object.entries(means))
  console.log(`${mode} the subject page index: ${list.join(" / ")} ms per 1,000-row write (rounds)`);
