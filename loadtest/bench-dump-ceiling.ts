/**
 * PostgreSQL's own ceiling for a dump import, with no Pemba code in the write: 900,000 tuple rows of bench-dump.ts's
 * shape written into the real `tuples` table (Pemba's migrations, its six indexes) by one `COPY ... FROM STDIN`, and,
 * into a second database, the path Pemba's import takes (COPY into an unlogged staging table, then
 * `INSERT ... SELECT ... ON CONFLICT DO NOTHING`), each timed as the server backend's CPU seconds (/proc) and wall:
 *
 *   node --experimental-strip-types loadtest/bench-dump-ceiling.ts [--rows 900000]
 */
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Writable } from "node:stream";
import { parseArgs } from "node:util";
import { PostgresStore } from "@pemba/core/node";
import { startPostgres } from "@pemba/core/testing/node";

// the PostgreSQL client is core's dependency, not the workspace root's
const require = createRequire(new URL("../packages/core/package.json", import.meta.url));
interface PgClient {
  connect(): Promise<void>;
  end(): Promise<void>;
  query(text: string): Promise<{ rows: Record<string, unknown>[] }>;
  query(stream: Writable): Writable;
}
const pg = require("pg") as { Client: new (o: { connectionString: string }) => PgClient };
const { from: copyFrom } = require("pg-copy-streams") as { from: (text: string) => Writable };

const { values } = parseArgs({ options: { rows: { type: "string", default: "900000" } } });
const rows = Number(values.rows);
const TICK = 100; // clock ticks a second (getconf CLK_TCK)

function tsv(): string[] {
  const out: string[] = [];
  for (let i = 0; i < rows; i++) {
    const [st, sid, sr] = i % 7 === 0 ? ["team", `t${i % 1000}`, "member"] : ["user", `u${i % 100_000}`, ""];
    const e = i % 11 === 0 ? String(1_900_000_000_000 + i) : "\\N";
    out.push(`bench\tdoc\td${i >> 3}\tviewer\t${st}\t${sid}\t${sr}\t1\t${e}\n`);
  }
  return out;
}

const cpuOf = (pid: number): number => {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(f[11]) + Number(f[12])) / TICK;
};

async function copy(client: PgClient, target: string, lines: string[]): Promise<void> {
  const stream = client.query(copyFrom(`COPY ${target} FROM STDIN`));
  const done = once(stream, "finish");
  for (let i = 0; i < lines.length; i += 1000) {
    if (!stream.write(lines.slice(i, i + 1000).join(""))) await once(stream, "drain");
  }
  stream.end();
  await done;
}

const COLUMNS =
  "tenant_id, entity_type, entity_id, relation, subject_type, subject_id, subject_relation, created_tx, expires_at";
const server = await startPostgres();
const admin = new pg.Client({ connectionString: server.url });
await admin.connect();
const lines = tsv();
try {
  for (const mode of ["copy into tuples", "copy into staging + INSERT ... SELECT ... ON CONFLICT"]) {
    const name = `ceiling_${mode.startsWith("copy into tuples") ? "a" : "b"}`;
    await admin.query(`CREATE DATABASE ${name}`);
    const url = server.url.replace(/\/postgres$/, `/${name}`);
    await (await PostgresStore.open(url)).close();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const pid = Number((await client.query("SELECT pg_backend_pid() AS p")).rows[0]!.p);
    await client.query("SET synchronous_commit = off");
    const cpu0 = cpuOf(pid);
    const t0 = performance.now();
    await client.query("BEGIN");
    if (mode === "copy into tuples") await copy(client, `tuples (${COLUMNS})`, lines);
    else {
      await client.query(
        "CREATE UNLOGGED TABLE stage (tenant_id text, entity_type text, entity_id text, relation text, subject_type text, subject_id text, subject_relation text, created_tx bigint, expires_at bigint)",
      );
      await copy(client, "stage", lines);
      await client.query(
        `INSERT INTO tuples (${COLUMNS}) SELECT ${COLUMNS} FROM stage ON CONFLICT (tenant_id, entity_type, entity_id, relation, subject_type, subject_id, subject_relation) WHERE deleted_tx IS NULL DO NOTHING`,
      );
    }
    await client.query("COMMIT");
    const wall = (performance.now() - t0) / 1000;
    const cpu = cpuOf(pid) - cpu0;
    console.log(
      `${mode}: ${rows} rows, backend ${cpu.toFixed(2)} CPU s (${Math.round(rows / cpu)} rows per CPU second), ${wall.toFixed(1)} s wall (${Math.round(rows / wall)} rows/s)`,
    );
    await client.end();
  }
} finally {
  await admin.end();
  await server.stop();
}
