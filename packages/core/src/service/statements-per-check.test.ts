/**
 * Round trips are the cost on a remote database: statements per permission request on the async SQL stores of
 * Node (libSQL over a file: URL, PostgreSQL); the suite is testing/statement-counts.ts.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll } from "vitest";
import { LibsqlStore } from "../store/drivers/libsql.ts";
import { PostgresStore } from "../store/drivers/postgres.ts";
import { type PostgresServer, startPostgres } from "../store/testing/postgres-server.ts";
import { describeStatementCounts } from "./testing/statement-counts.ts";

const dir = mkdtempSync(join(tmpdir(), "pemba-statements-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describeStatementCounts(
  "libSQL file: URL",
  () => (onQuery) => LibsqlStore.open(`file:${join(dir, "libsql.db")}`, { onQuery }),
);

let server: PostgresServer | undefined;
afterAll(async () => {
  await server?.stop();
});
describeStatementCounts("PostgreSQL", () => async (onQuery) => {
  server = await startPostgres();
  const admin = new pg.Pool({ connectionString: server.url, max: 1 });
  await admin.query("CREATE DATABASE pemba_statements");
  await admin.end();
  return PostgresStore.open(server.url.replace(/\/postgres$/, "/pemba_statements"), { onQuery });
});
