/**
 * Writes a validation file's schema, relationships and attributes into a tenant of a running Pemba (or Permify)
 * server over its HTTP API: the schema first, then the data in batches of `batchSize` rows (each one
 * `data/write`), reporting progress after each batch. A tenant the server does not have is created. `pemba load` runs it; tests load their fixtures with it.
 */

import type { Attribute, Tuple } from "../model.ts";
import {
  parseAttributeString,
  parseEntityString,
  parseSubjectString,
  parseTupleString,
} from "../schema/notation.ts";
import { attributeToWire, tupleToWire } from "../wire/convert.ts";
import { loadSchemaText, type SchemaFileReader } from "./schema-source.ts";
import { decodeShape } from "./shape.ts";

export interface UploadTarget {
  /** The server's base URL (`http://127.0.0.1:3476`). */
  url: string;
  tenant: string;
  /** A preshared key or access token, sent as `Authorization: Bearer`. */
  token?: string;
}

export interface UploadProgress {
  rows: number;
  totalRows: number;
}

export interface UploadOptions {
  /** Reads the file a path-like `schema:` names (`schemaFiles(dir)` from `@pemba/core/node`); without it, the DSL. */
  readSchemaFile?: SchemaFileReader;
  /** Rows (relationships + attributes) per `data/write`; default 500. */
  batchSize?: number;
  onProgress?: (p: UploadProgress) => void;
}

export interface UploadResult {
  schemaVersion: string;
  /** The last write's snap token ("" when the file has no data). */
  snapToken: string;
  tuples: number;
  attributes: number;
}

/**
 * A relationship in Permify's notation; also one whose ids hold `@` (an email), which Permify's notation (split on
 * `@`) cannot write: read left to right, the relation ends at the first `@` after the entity's `#`.
 */
export function parseRelationship(s: string): Tuple {
  try {
    return parseTupleString(s);
  } catch (e) {
    const text = s.trim();
    const hash = text.indexOf("#");
    const at = hash < 0 ? -1 : text.indexOf("@", hash);
    if (at < 0) throw e;
    try {
      const relation = text.slice(hash + 1, at);
      if (!/^[A-Za-z_]+$/.test(relation)) throw e;
      return {
        entity: parseEntityString(text.slice(0, hash)),
        relation,
        subject: parseSubjectString(text.slice(at + 1)),
      };
    } catch {
      throw e;
    }
  }
}

/** A validation file's data: the schema text, and its rows parsed (line numbers in errors). */
export async function validationFileData(
  text: string,
  readSchemaFile?: SchemaFileReader,
): Promise<{ schema: string; tuples: Tuple[]; attributes: Attribute[] }> {
  const shape = decodeShape(text);
  const parse = <T>(items: { value: string; line: number }[], f: (s: string) => T) =>
    items.map((item) => {
      try {
        return f(item.value);
      } catch (e) {
        throw new Error(`line ${item.line}: ${(e as Error).message}`);
      }
    });
  return {
    schema: await loadSchemaText(shape.schema, readSchemaFile),
    tuples: parse(shape.relationships, parseRelationship),
    attributes: parse(shape.attributes, parseAttributeString),
  };
}

class HttpError extends Error {
  readonly text: string;
  constructor(path: string, status: number, text: string) {
    super(`${path}: HTTP ${status} ${text}`);
    this.text = text;
  }
}

/** POSTs `body` to `path` (under the tenant's prefix unless `tenantPath` is false). */
async function post(
  target: UploadTarget,
  path: string,
  body: unknown,
  tenantPath = true,
): Promise<Record<string, unknown>> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (target.token !== undefined) headers.authorization = `Bearer ${target.token}`;
  const prefix = tenantPath ? `/v1/tenants/${encodeURIComponent(target.tenant)}` : "";
  const res = await fetch(`${target.url.replace(/\/+$/, "")}${prefix}${path}`, {
    method: "POST",
    headers,
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new HttpError(path, res.status, text);
  return JSON.parse(text) as Record<string, unknown>;
}

/** Writes the schema, creating the tenant first when the server does not have it. */
async function writeSchema(target: UploadTarget, schema: string): Promise<Record<string, unknown>> {
  try {
    return await post(target, "/schemas/write", { schema });
  } catch (e) {
    if (!(e instanceof HttpError && e.text.includes("ERROR_CODE_TENANT_NOT_FOUND"))) throw e;
    await post(target, "/v1/tenants/create", { id: target.tenant, name: target.tenant }, false);
    return post(target, "/schemas/write", { schema });
  }
}

/** Loads the validation file `text` into the target tenant. */
export async function uploadValidationFile(
  text: string,
  target: UploadTarget,
  opts: UploadOptions = {},
): Promise<UploadResult> {
  const { schema, tuples, attributes } = await validationFileData(text, opts.readSchemaFile);
  const written = await writeSchema(target, schema);
  const schemaVersion = String(written.schema_version);
  const batch = Math.max(1, opts.batchSize ?? 500);
  const totalRows = tuples.length + attributes.length;
  let snapToken = "";
  for (let at = 0; at < totalRows; at += batch) {
    const end = Math.min(totalRows, at + batch);
    const t = tuples.slice(Math.min(at, tuples.length), Math.min(end, tuples.length));
    const a = attributes.slice(Math.max(0, at - tuples.length), Math.max(0, end - tuples.length));
    const out = await post(target, "/data/write", {
      metadata: { schema_version: schemaVersion },
      tuples: t.map(tupleToWire),
      attributes: a.map(attributeToWire),
    });
    snapToken = String(out.snap_token);
    opts.onProgress?.({ rows: end, totalRows });
  }
  return { schemaVersion, snapToken, tuples: tuples.length, attributes: attributes.length };
}
