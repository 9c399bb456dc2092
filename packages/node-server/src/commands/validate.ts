/** `pemba validate <file.yaml>`: Permify's `permify validate`; exit 1 when any assertion fails. */
import { readFile } from "node:fs/promises";
import { dirname } from "node:path";
import { parseArgs } from "node:util";
import { formatReport, validateFile } from "@pemba/core";
import { schemaFiles } from "@pemba/core/node";
import { callerPath } from "./caller-path.ts";

export async function runValidate(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { unchecked: { type: "boolean" } },
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length !== 1) {
    process.stderr.write("usage: pemba validate <file.yaml> [--unchecked]\n");
    return 2;
  }
  const path = callerPath(positionals[0]);
  const text = await readFile(path, "utf8");
  const started = performance.now();
  const report = await validateFile(text, {
    readSchemaFile: schemaFiles(dirname(path)),
    unchecked: values.unchecked === true,
  });
  const ms = performance.now() - started;
  process.stdout.write(`${formatReport(report)}\n`);
  process.stdout.write(`validated ${positionals[0]} in ${ms.toFixed(1)} ms\n`);
  return report.ok ? 0 : 1;
}
