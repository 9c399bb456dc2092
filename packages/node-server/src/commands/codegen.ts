/**
 * `pemba codegen <schema.perm> [-o authz.ts]`: a schema -> TypeScript types for @pemba/sdk's TypedClient
 * (schema-types.ts).
 */
import { readFile, writeFile } from "node:fs/promises";
import { basename } from "node:path";
import { parseArgs } from "node:util";
import { generateSchemaTypes } from "../schema-types.ts";
import { callerPath } from "./caller-path.ts";

export async function runCodegen(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      out: { type: "string", short: "o" },
      "type-name": { type: "string" },
      "sdk-import": { type: "string" },
    },
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length !== 1) {
    process.stderr.write(
      "usage: pemba codegen <schema.perm> [-o <out.ts>] [--type-name AuthzSchema] [--sdk-import @pemba/sdk]\n",
    );
    return 2;
  }
  const started = performance.now();
  const text = generateSchemaTypes(await readFile(callerPath(positionals[0]), "utf8"), {
    typeName: values["type-name"],
    sdkImport: values["sdk-import"],
    sourceName: basename(positionals[0]),
  });
  if (values.out === undefined) {
    process.stdout.write(text);
    return 0;
  }
  await writeFile(callerPath(values.out), text);
  const ms = (performance.now() - started).toFixed(1);
  process.stderr.write(`pemba codegen: wrote ${values.out} from ${positionals[0]} in ${ms} ms\n`);
  return 0;
}
