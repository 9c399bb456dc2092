/**
 * The `schema` value of a validation file is an http(s) URL, a path to an existing file, or the DSL itself
 * (Permify's pkg/schema/loader.go). Node modules are imported lazily so that the core stays loadable in Workers.
 */

function isHttpUrl(value: string): boolean {
  if (!/^https?:\/\//i.test(value.trim())) return false;
  try {
    new URL(value.trim());
    return true;
  } catch {
    return false;
  }
}

/** A one-line value that could name a file (the DSL always contains `{` or is empty). */
function couldBePath(value: string): boolean {
  const v = value.trim();
  return v !== "" && !v.includes("\n") && !v.includes("{");
}

export async function loadSchemaText(value: string, baseDir?: string): Promise<string> {
  if (isHttpUrl(value)) {
    const response = await fetch(value.trim());
    if (!response.ok) throw new Error(`cannot fetch schema ${value.trim()}: HTTP ${response.status}`);
    return response.text();
  }
  if (couldBePath(value)) {
    const fs = await import("node:fs/promises").catch(() => undefined);
    if (fs === undefined) return value; // no file system (Workers): the value is the DSL
    const { readFile, stat } = fs;
    const { resolve } = await import("node:path");
    const path = resolve(baseDir ?? process.cwd(), value.trim());
    const found = await stat(path).then(
      (s) => s.isFile(),
      () => false,
    );
    if (found) return readFile(path, "utf8");
  }
  return value;
}
