/** The database a load test runs on: a temp SQLite file, or a throwaway PostgreSQL server. */
import { createRequire } from "node:module";
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

/** A connected node-postgres client (the driver @pemba/core depends on), for a benchmark's own SQL. */
export interface PgClient {
  query(statement: string): Promise<{ rows: Record<string, unknown>[] }>;
  end(): Promise<void>;
}

export async function connectPg(url: string): Promise<PgClient> {
  const pg = createRequire(import.meta.resolve("@pemba/core/node"))("pg") as {
    Client: new (o: { connectionString: string }) => PgClient & { connect(): Promise<void> };
  };
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return client;
}
