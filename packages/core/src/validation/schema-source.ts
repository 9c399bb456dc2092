/**
 * The `schema` value of a validation file is an http(s) URL, a path to an existing file, or the DSL itself
 * (Permify's pkg/schema/loader.go). Files are read by a reader the caller passes (`schemaFiles` in
 * `@pemba/core/node`): this entry imports no Node built-in, so the Worker's bundle has none.
 */

/** The text of the file a path-like value names; undefined when there is no such file. */
export type SchemaFileReader = (path: string) => Promise<string | undefined>;

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

/**
 * The schema text: fetched for a URL, `readFile`'s for a path-like value naming a file, else the value itself
 * (without a reader, as in Workers and browsers, a path-like value is the DSL).
 */
export async function loadSchemaText(value: string, readFile?: SchemaFileReader): Promise<string> {
  if (isHttpUrl(value)) {
    const response = await fetch(value.trim());
    if (!response.ok) throw new Error(`cannot fetch schema ${value.trim()}: HTTP ${response.status}`);
    return response.text();
  }
  if (couldBePath(value) && readFile !== undefined) {
    const text = await readFile(value.trim());
    if (text !== undefined) return text;
  }
  return value;
}
