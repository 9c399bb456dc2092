/** Schema files of validation files on the local file system (Node only: `@pemba/core/node`). */
import { readFile, stat } from "node:fs/promises";
import { resolve } from "node:path";
import type { SchemaFileReader } from "./schema-source.ts";

/** Reads a path-like `schema:` value as a file, relative to `baseDir` (default: the working directory). */
export function schemaFiles(baseDir = process.cwd()): SchemaFileReader {
  return async (value) => {
    const path = resolve(baseDir, value);
    const found = await stat(path).then(
      (s) => s.isFile(),
      () => false,
    );
    return found ? readFile(path, "utf8") : undefined;
  };
}
