/** `pemba migrate`: create or upgrade the database tables. */
import { parseArgs } from "node:util";
import { describeDatabase, resolveSetting } from "@pemba/core";
import { migrate } from "@pemba/core/node";

export async function runMigrate(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { database: { type: "string" } }, strict: true });
  const database = resolveSetting("database", "node", values, process.env);
  const started = performance.now();
  const applied = await migrate(database);
  const ms = Math.round(performance.now() - started);
  for (const name of applied) process.stdout.write(`applied ${name}\n`);
  const what = applied.length === 0 ? "already up to date" : `${applied.length} migration(s) applied`;
  process.stdout.write(`migrate ${describeDatabase(database)}: ${what} (${ms} ms)\n`);
  return 0;
}
