/**
 * `pemba export --database <url> | --url <server> --tenant <id> [-o FILE] [--snap-token T] [--gzip]`: the tenant's
 * dump (docs/DUMP.md) at one snap, streamed to FILE (renamed into place when complete) or stdout. The summary
 * goes to stderr, so stdout carries only the dump.
 */
import { existsSync } from "node:fs";
import { parseArgs } from "node:util";
import { exportDump, PembaService } from "@pemba/core";
import { openStore } from "@pemba/core/node";
import { ConfigError } from "../config.ts";
import { callerPath } from "./caller-path.ts";
import { DumpOutput, nativeCrc32 } from "./dump-files.ts";

const USAGE =
  "usage: pemba export (--database <url> | --url <server> [--token <key>]) [--tenant <id>] [-o <file>] [--snap-token <token>] [--gzip]\n";

const isUrl = (s: string) => /^[a-z][a-z0-9+.-]*:/i.test(s);

/** A database flag as openStore takes it: a URL, or a SQLite file that must exist (an export creates nothing). */
export function databaseUrl(database: string): string {
  if (isUrl(database)) return database;
  const path = callerPath(database);
  if (!existsSync(path)) throw new ConfigError(`--database ${database}: no such SQLite file`);
  return path;
}

export async function runExport(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      database: { type: "string" },
      url: { type: "string" },
      token: { type: "string" },
      tenant: { type: "string", default: "t1" },
      out: { type: "string", short: "o" },
      "snap-token": { type: "string", default: "" },
      gzip: { type: "boolean" },
      "page-size": { type: "string", default: "5000" },
    },
    strict: true,
  });
  if ((values.database === undefined) === (values.url === undefined)) {
    process.stderr.write(USAGE);
    return 2;
  }
  const started = performance.now();
  const output = new DumpOutput(values.out, values.gzip === true);
  let summary: string;
  try {
    if (values.database !== undefined) {
      const store = await openStore(databaseUrl(values.database));
      try {
        const service = new PembaService(store);
        const dump = await exportDump(service, values.tenant!, {
          snapToken: values["snap-token"],
          pageSize: Number(values["page-size"]),
          crc32: nativeCrc32,
        });
        for await (const chunk of dump.chunks) await output.write(chunk);
        const rows = dump.counts.tuples + dump.counts.attributes;
        const s = (performance.now() - started) / 1000;
        summary = `exported tenant ${values.tenant}: ${dump.counts.tuples} tuples, ${dump.counts.attributes} attributes at snap token ${dump.snapToken} in ${s.toFixed(1)} s (${Math.round(rows / s)} rows/s)`;
      } finally {
        await store.close();
      }
    } else {
      const url = `${values.url!.replace(/\/+$/, "")}/v1/tenants/${encodeURIComponent(values.tenant!)}/data/export`;
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (values.token) headers.authorization = `Bearer ${values.token}`;
      const res = await fetch(url, {
        method: "POST",
        headers,
        body: JSON.stringify({ snap_token: values["snap-token"] }),
      });
      if (!res.ok || res.body === null)
        throw new ConfigError(`${url}: HTTP ${res.status} ${await res.text()}`);
      let bytes = 0;
      for await (const chunk of res.body) {
        bytes += chunk.byteLength;
        await output.write(chunk);
      }
      const s = (performance.now() - started) / 1000;
      summary = `exported tenant ${values.tenant} from ${values.url}: ${bytes} bytes in ${s.toFixed(1)} s`;
    }
    await output.close();
  } catch (e) {
    output.abort();
    throw e;
  }
  process.stderr.write(`${summary}\n`);
  return 0;
}
