/** Resets a local D1 database to empty, so each test opens a fresh store on it. */
import type { D1Database } from "@pemba/core";

export async function emptyDatabase(db: D1Database): Promise<void> {
  const { results } = await db
    .prepare(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'",
    )
    .all();
  if (results.length === 0) return;
  await db.batch(results.map((r) => db.prepare(`DROP TABLE "${r.name as string}"`)));
}
