/**
 * `pemba load <file.yaml> --url URL --tenant T [--token K] [--batch N]`: writes a validation file's schema,
 * relationships and attributes into a tenant of a running server over its HTTP API, in batches, with a progress
 * line on stderr. Prints the schema version and the last snap token.
 */
import { readFile } from "node:fs/promises";
import { dirname } from "node:path";
import { parseArgs } from "node:util";
import { uploadValidationFile } from "@pemba/core";
import { callerPath } from "./caller-path.ts";

const USAGE = "usage: pemba load <file.yaml> --url <url> --tenant <id> [--token <key>] [--batch <n>]\n";

export async function runLoad(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      url: { type: "string", default: "http://127.0.0.1:3476" },
      tenant: { type: "string", default: "t1" },
      token: { type: "string" },
      batch: { type: "string", default: "500" },
    },
    allowPositionals: true,
    strict: true,
  });
  const batch = Number(values.batch);
  if (positionals.length !== 1 || !Number.isInteger(batch) || batch < 1) {
    process.stderr.write(USAGE);
    return 2;
  }
  const path = callerPath(positionals[0]!);
  const text = await readFile(path, "utf8");
  const started = performance.now();
  const tty = process.stderr.isTTY === true;
  const result = await uploadValidationFile(
    text,
    { url: values.url, tenant: values.tenant, token: values.token },
    {
      baseDir: dirname(path),
      batchSize: batch,
      onProgress: ({ rows, totalRows }) => {
        const line = `loaded ${rows}/${totalRows} rows`;
        process.stderr.write(tty ? `\r${line}` : `${line}\n`);
      },
    },
  );
  if (tty && result.tuples + result.attributes > 0) process.stderr.write("\n");
  const ms = performance.now() - started;
  process.stdout.write(
    `tenant ${values.tenant}: schema ${result.schemaVersion}, ${result.tuples} relationships, ` +
      `${result.attributes} attributes in ${ms.toFixed(1)} ms; snap token ${result.snapToken || "(none)"}\n`,
  );
  return 0;
}
