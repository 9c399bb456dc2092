/** The database a load test runs on: a temp SQLite file, or a throwaway PostgreSQL server. */
import { join } from "node:path";

export interface TestDatabase {
  url: string;
  label: string;
  stop(): Promise<void>;
}

export async function startDatabase(postgres: boolean, dir: string): Promise<TestDatabase> {
  if (!postgres) {
    const path = join(dir, "pemba.db");
    return { url: path, label: `SQLite file ${path}`, stop: async () => {} };
  }
  const { startPostgres } = await import("@pemba/core/testing/node");
  const pg = await startPostgres();
  return { url: pg.url, label: `PostgreSQL ${pg.url.replace(/:[^:@/]*@/, ":***@")}`, stop: pg.stop };
}
