/**
 * Another system's data as dump records (`pemba import --from <source>`). A source is read whole and converted
 * before anything is written, so whatever Pemba cannot represent (an OpenFGA condition, a wildcard subject, a
 * SpiceDB caveat without an attribute equivalent) stops the import naming it, and nothing is dropped.
 */
import { readFile } from "node:fs/promises";
import { dirname } from "node:path";
import { crc32 as zlibCrc32 } from "node:zlib";
import { fromBinary, toJson } from "@bufbuild/protobuf";
import { StructSchema } from "@bufbuild/protobuf/wkt";
import {
  type Attribute,
  type AttributeType,
  attributeTypeWord,
  attributeValueFromWire,
  crc32,
  crcHex,
  type DumpLine,
  decodeShape,
  loadSchemaText,
  PembaError,
  parseAttributeString,
  parseSchema,
  parseTupleString,
  type Tuple,
} from "@pemba/core";
import { schemaFiles } from "@pemba/core/node";
import avro from "avsc";
import { uncompress as snappyUncompress } from "snappyjs";
import { parse as parseYaml } from "yaml";
import { ConfigError } from "../config.ts";
import { callerPath } from "./caller-path.ts";

export interface MigrationOptions {
  tenant: string;
  /** `type:old=new` or `relation:old=new` (or `relation:type#old=new`): names renamed on the way in. */
  rewrites: string[];
  /** The Pemba schema the rows go under, when the source has none Pemba reads (OpenFGA). */
  schemaFile?: string;
}

export interface MigrationSource {
  lines: DumpLine[];
  totals: { tuples: number; attributes: number };
}

/** Something the source holds that Pemba cannot represent: the import stops before writing. */
export class UnrepresentableError extends PembaError {
  constructor(items: string[]) {
    const shown = items.slice(0, 20).join("\n  ");
    super(
      "ERROR_CODE_VALIDATION",
      `the source holds ${items.length} thing(s) Pemba cannot represent; nothing was written:\n  ${shown}${items.length > 20 ? `\n  ... and ${items.length - 20} more` : ""}`,
    );
  }
}

/** The records of a migrated tenant: a header, the schema (version named after its text), the rows. */
function asDump(tenant: string, schema: string, tuples: Tuple[], attributes: Attribute[]): MigrationSource {
  const version = `m${crcHex(crc32(new TextEncoder().encode(schema)))}`;
  const lines: DumpLine[] = [
    {
      kind: "header",
      line: 1,
      header: {
        type: "header",
        format: "pemba-dump",
        version: 1,
        tenant,
        schema_version: version,
        snap_token: "",
        created_at: new Date().toISOString(),
      },
    },
    { kind: "schema", line: 2, schema: { type: "schema", version, text: schema } },
  ];
  let line = 3;
  for (const tuple of tuples) lines.push({ kind: "tuple", line: line++, tuple });
  for (const attribute of attributes) lines.push({ kind: "attribute", line: line++, attribute });
  return { lines, totals: { tuples: tuples.length, attributes: attributes.length } };
}

/** Applies `--rewrite` rules to type and relation names. */
export class Rewrites {
  readonly #types = new Map<string, string>();
  readonly #relations = new Map<string, string>();

  constructor(rules: string[]) {
    for (const rule of rules) {
      const m = /^(type|relation):([\w#]+)=(\w+)$/.exec(rule);
      if (m === null)
        throw new ConfigError(`--rewrite ${rule}: expected type:old=new or relation:[type#]old=new`);
      (m[1] === "type" ? this.#types : this.#relations).set(m[2]!, m[3]!);
    }
  }

  type = (t: string): string => this.#types.get(t) ?? t;
  /** A relation of `type` (the source's name). */
  relation = (type: string, r: string): string =>
    this.#relations.get(`${type}#${r}`) ?? this.#relations.get(r) ?? r;

  tuple(t: Tuple): Tuple {
    const out: Tuple = {
      entity: { type: this.type(t.entity.type), id: t.entity.id },
      relation: this.relation(t.entity.type, t.relation),
      subject: {
        type: this.type(t.subject.type),
        id: t.subject.id,
        relation: t.subject.relation ? this.relation(t.subject.type, t.subject.relation) : "",
      },
    };
    if (t.expiresAt !== undefined) out.expiresAt = t.expiresAt;
    return out;
  }
}

/** A Permify validation file: its schema (inline, a file or a URL), relationships and attributes. */
async function permifyValidation(path: string, opts: MigrationOptions): Promise<MigrationSource> {
  const file = callerPath(path);
  const shape = decodeShape(await readFile(file, "utf8"));
  const schema = await loadSchemaText(shape.schema, schemaFiles(dirname(file)));
  parseSchema(schema);
  const bad: string[] = [];
  const tuples: Tuple[] = [];
  for (const r of shape.relationships) {
    try {
      tuples.push(parseTupleString(r.value));
    } catch (e) {
      bad.push(`${path}:${r.line}: relationship ${JSON.stringify(r.value)}: ${(e as Error).message}`);
    }
  }
  const attributes: Attribute[] = [];
  for (const a of shape.attributes) {
    try {
      attributes.push(parseAttributeString(a.value));
    } catch (e) {
      bad.push(`${path}:${a.line}: attribute ${JSON.stringify(a.value)}: ${(e as Error).message}`);
    }
  }
  if (bad.length > 0) throw new UnrepresentableError(bad);
  return asDump(opts.tenant, schema, tuples, attributes);
}

interface FgaTuple {
  user?: unknown;
  relation?: unknown;
  object?: unknown;
  condition?: unknown;
}

/** `type:id` or `type:id#relation` (OpenFGA's user and object forms). */
function fgaReference(
  text: string,
  where: string,
  bad: string[],
): { type: string; id: string; relation: string } | undefined {
  const m = /^([^:#\s]+):([^#\s]+)(?:#([^\s]+))?$/.exec(text);
  if (m === null) {
    bad.push(`${where}: ${JSON.stringify(text)} is not type:id or type:id#relation`);
    return undefined;
  }
  if (m[2] === "*") {
    bad.push(
      `${where}: the public wildcard ${text} (Pemba stores no wildcard subject; grant it with a rule or an attribute)`,
    );
    return undefined;
  }
  return { type: m[1]!, id: m[2]!, relation: m[3] ?? "" };
}

/** Tuples of OpenFGA: `fga store export` YAML (`tuples:`), or a CSV, JSON (array) or JSONL file of tuples. */
function fgaTuples(text: string, path: string): { rows: FgaTuple[]; where: (i: number) => string } {
  const lower = path.toLowerCase();
  if (lower.endsWith(".csv")) {
    const lines = text.split(/\r?\n/).filter((l) => l.trim() !== "");
    const head = lines[0]!.split(",").map((h) => h.trim());
    const col = (name: string) => head.indexOf(name);
    const [user, userType, userId, userRelation] = [
      col("user"),
      col("user_type"),
      col("user_id"),
      col("user_relation"),
    ];
    const [relation, object, objectType, objectId] = [
      col("relation"),
      col("object"),
      col("object_type"),
      col("object_id"),
    ];
    const condition = col("condition_name");
    const rows = lines.slice(1).map((l) => {
      const c = l.split(",").map((v) => v.trim());
      const u =
        user >= 0
          ? c[user]
          : `${c[userType]}:${c[userId]}${userRelation >= 0 && c[userRelation] ? `#${c[userRelation]}` : ""}`;
      const o = object >= 0 ? c[object] : `${c[objectType]}:${c[objectId]}`;
      return {
        user: u,
        relation: c[relation],
        object: o,
        condition: condition >= 0 && c[condition] ? c[condition] : undefined,
      };
    });
    return { rows, where: (i) => `${path}:${i + 2}` };
  }
  if (lower.endsWith(".jsonl") || lower.endsWith(".ndjson")) {
    const rows = text
      .split(/\r?\n/)
      .map((l, i) => ({ l, i }))
      .filter(({ l }) => l.trim() !== "");
    return {
      rows: rows.map(({ l }) => JSON.parse(l) as FgaTuple),
      where: (i) => `${path}:${rows[i]!.i + 1}`,
    };
  }
  if (lower.endsWith(".json")) {
    const parsed = JSON.parse(text) as unknown;
    const rows = (
      Array.isArray(parsed) ? parsed : ((parsed as { tuples?: FgaTuple[] }).tuples ?? [])
    ) as FgaTuple[];
    return { rows, where: (i) => `${path}: tuple ${i + 1}` };
  }
  const doc = parseYaml(text) as { tuples?: FgaTuple[] };
  return { rows: doc?.tuples ?? [], where: (i) => `${path}: tuples[${i}]` };
}

async function openfga(path: string, opts: MigrationOptions): Promise<MigrationSource> {
  const schema = await declaredSchema(opts, "openfga", "OpenFGA's model language");
  const rewrites = new Rewrites(opts.rewrites);
  const { rows, where } = fgaTuples(await readFile(callerPath(path), "utf8"), path);
  const bad: string[] = [];
  const tuples: Tuple[] = [];
  rows.forEach((r, i) => {
    const at = where(i);
    if (r.condition !== undefined && r.condition !== null && r.condition !== "") {
      const name =
        typeof r.condition === "object" ? (r.condition as { name?: string }).name : String(r.condition);
      bad.push(
        `${at}: condition ${JSON.stringify(name)} on ${String(r.object)}#${String(r.relation)}@${String(r.user)} (no Pemba equivalent on a tuple)`,
      );
      return;
    }
    if (typeof r.user !== "string" || typeof r.relation !== "string" || typeof r.object !== "string") {
      bad.push(`${at}: a tuple needs user, relation and object strings`);
      return;
    }
    const subject = fgaReference(r.user, at, bad);
    const entity = fgaReference(r.object, at, bad);
    if (subject === undefined || entity === undefined) return;
    tuples.push(
      rewrites.tuple({ entity: { type: entity.type, id: entity.id }, relation: r.relation, subject }),
    );
  });
  if (bad.length > 0) throw new UnrepresentableError(bad);
  return asDump(opts.tenant, schema, tuples, []);
}

/** The Pemba schema a source without one in Permify's language goes under (`--schema`). */
async function declaredSchema(opts: MigrationOptions, from: string, language: string): Promise<string> {
  if (opts.schemaFile === undefined)
    throw new ConfigError(
      `--from ${from} needs --schema <file.perm>: the Pemba schema the rows go under (${language} is not Permify's)`,
    );
  const schema = await readFile(callerPath(opts.schemaFile), "utf8");
  parseSchema(schema);
  return schema;
}

/** An id Pemba stores (the dump's id rule); SpiceDB's ids may hold `/`, `|` and `=`, which it does not. */
const PEMBA_ID = /^[a-zA-Z0-9_\-@.:+]{1,128}$/;

/** One relationship of a zed backup (zed's backupformat RelationshipV1). */
interface ZedRelationship {
  object_type: string;
  object_id: string;
  relation: string;
  subject_object_type: string;
  subject_object_id: string;
  subject_relation: string;
  caveat_name: string;
  caveat_context: Uint8Array;
  /** timestamp-millis; Go's zero time (no expiration) when the relationship has none. */
  expiration: number;
}

/** Go's zero time.Time in Unix milliseconds: what zed writes for a relationship without an expiration. */
const GO_ZERO_TIME_MS = -62_135_596_800_000;

/**
 * Avro's snappy codec: each block is Snappy-compressed data followed by the big-endian CRC-32 of the uncompressed
 * bytes, checked here.
 */
function snappyBlock(block: Buffer, cb: (err: Error | null, data?: Buffer) => void): void {
  try {
    const data = Buffer.from(snappyUncompress(block.subarray(0, block.length - 4)));
    if (zlibCrc32(data) !== block.readUInt32BE(block.length - 4))
      throw new Error("a block's CRC-32 does not match its data: the file is corrupt");
    cb(null, data);
  } catch (e) {
    cb(e as Error);
  }
}

/**
 * SpiceDB's `zed backup` file: an Avro object container (avsc reads it; Snappy blocks through snappyjs) whose
 * records are a union of zed's schema_v1 (the schema text, first) and relationship_v1. The rows go under the Pemba
 * schema of `--schema` (SpiceDB's schema language is not Permify's). Expirations become the tuples' expires_at. A
 * caveated relationship has no Pemba equivalent (a caveat is a condition on one relationship, an attribute belongs
 * to an entity), nor has an id with characters Pemba's ids exclude: each is named and nothing is written.
 */
async function zedBackup(path: string, opts: MigrationOptions): Promise<MigrationSource> {
  const schema = await declaredSchema(opts, "zed-backup", "SpiceDB's schema language");
  const rewrites = new Rewrites(opts.rewrites);
  const records: Record<string, unknown>[] = [];
  await new Promise<void>((resolve, reject) => {
    const decoder = avro.createFileDecoder(callerPath(path), {
      codecs: { snappy: snappyBlock },
      // unions as { "<record name>": value }, so each record says which of zed's records it is
      parseHook: (s) => avro.Type.forSchema(s as avro.Schema, { wrapUnions: true }),
    });
    decoder.on("data", (r: Record<string, unknown>) => records.push(r));
    decoder.on("error", (e: Error) =>
      reject(new PembaError("ERROR_CODE_VALIDATION", `${path}: not a readable zed backup: ${e.message}`)),
    );
    decoder.on("end", resolve);
  });
  const bad: string[] = [];
  const tuples: Tuple[] = [];
  let relationships = 0;
  for (const record of records) {
    const [name, value] = Object.entries(record)[0] ?? [];
    if (name?.endsWith(".schema_v1")) continue;
    if (!name?.endsWith(".relationship_v1")) {
      bad.push(`${path}: a record of unknown kind ${JSON.stringify(name)}`);
      continue;
    }
    const r = value as ZedRelationship;
    const where = `${path}: relationship ${++relationships}`;
    const text = `${r.object_type}:${r.object_id}#${r.relation}@${r.subject_object_type}:${r.subject_object_id}${r.subject_relation ? `#${r.subject_relation}` : ""}`;
    if (r.caveat_name !== "") {
      let context = "";
      try {
        context = JSON.stringify(toJson(StructSchema, fromBinary(StructSchema, r.caveat_context)));
      } catch {
        context = "(unreadable)";
      }
      bad.push(
        `${where} (${text}): caveat ${JSON.stringify(r.caveat_name)} with context ${context} (a caveat is a condition on one relationship; Pemba has no equivalent on a tuple)`,
      );
      continue;
    }
    const badId = [r.object_id, r.subject_object_id].find((id) => !PEMBA_ID.test(id));
    if (badId !== undefined) {
      bad.push(`${where} (${text}): id ${JSON.stringify(badId)} has characters Pemba's ids do not allow`);
      continue;
    }
    const tuple: Tuple = {
      entity: { type: r.object_type, id: r.object_id },
      relation: r.relation,
      subject: { type: r.subject_object_type, id: r.subject_object_id, relation: r.subject_relation },
    };
    if (r.expiration !== GO_ZERO_TIME_MS) tuple.expiresAt = r.expiration;
    tuples.push(rewrites.tuple(tuple));
  }
  if (bad.length > 0) throw new UnrepresentableError(bad);
  return asDump(opts.tenant, schema, tuples, []);
}

// biome-ignore lint/suspicious/noExplicitAny: Permify's JSON answers are walked by hand, field by field
type Json = Record<string, any>;

const CEL_BINARY: Record<string, string> = {
  "_>_": ">",
  "_>=_": ">=",
  "_<_": "<",
  "_<=_": "<=",
  "_==_": "==",
  "_!=_": "!=",
  "_&&_": "&&",
  "_||_": "||",
  "_+_": "+",
  "_-_": "-",
  "_*_": "*",
  "_/_": "/",
  "_%_": "%",
  "@in": "in",
};

/** A rule's body from Permify's checked CEL expression (what schemas/read returns instead of its text). */
function celText(e: Json | undefined, rule: string): string {
  if (e === undefined || e === null) throw new Error(`rule ${rule}: an empty expression`);
  if (e.ident_expr) return e.ident_expr.name;
  if (e.select_expr) return `${celText(e.select_expr.operand, rule)}.${e.select_expr.field}`;
  if (e.const_expr) {
    const c = e.const_expr;
    if ("bool_value" in c) return String(c.bool_value);
    if ("int64_value" in c) return String(c.int64_value);
    if ("uint64_value" in c) return `${c.uint64_value}u`;
    if ("double_value" in c) {
      const d = String(c.double_value);
      return /[.eE]/.test(d) ? d : `${d}.0`;
    }
    if ("string_value" in c) return JSON.stringify(c.string_value);
    if ("null_value" in c) return "null";
  }
  if (e.list_expr) return `[${(e.list_expr.elements ?? []).map((x: Json) => celText(x, rule)).join(", ")}]`;
  if (e.call_expr) {
    const { function: fn, args = [], target } = e.call_expr;
    const a = (args as Json[]).map((x) => celText(x, rule));
    if (CEL_BINARY[fn] !== undefined && a.length === 2) return `(${a[0]} ${CEL_BINARY[fn]} ${a[1]})`;
    if (fn === "!_" && a.length === 1) return `!(${a[0]})`;
    if (fn === "-_" && a.length === 1) return `-(${a[0]})`;
    if (fn === "_?_:_" && a.length === 3) return `(${a[0]} ? ${a[1]} : ${a[2]})`;
    if (fn === "_[_]" && a.length === 2) return `${a[0]}[${a[1]}]`;
    if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(fn))
      return target ? `${celText(target, rule)}.${fn}(${a.join(", ")})` : `${fn}(${a.join(", ")})`;
  }
  throw new Error(
    `rule ${rule}: a CEL expression this migration cannot write back as text (${JSON.stringify(e).slice(0, 120)})`,
  );
}

/** A permission's child (Permify's rewrite tree) as the schema language's expression. */
function childText(c: Json): string {
  if (c.rewrite) {
    const op = { OPERATION_UNION: " or ", OPERATION_INTERSECTION: " and ", OPERATION_EXCLUSION: " not " }[
      c.rewrite.rewrite_operation as string
    ];
    if (op === undefined) throw new Error(`rewrite operation ${c.rewrite.rewrite_operation}`);
    return `(${(c.rewrite.children as Json[]).map(childText).join(op)})`;
  }
  const l = c.leaf ?? {};
  if (l.computed_user_set) return l.computed_user_set.relation;
  if (l.tuple_to_user_set) {
    const t = l.tuple_to_user_set;
    return `${(t.tupleSet ?? t.tuple_set).relation}.${t.computed.relation}`;
  }
  if (l.computed_attribute) return l.computed_attribute.name;
  if (l.call)
    return `${l.call.rule_name}(${(l.call.arguments ?? []).map((a: Json) => a.computed_attribute?.name ?? a.context_attribute?.name).join(", ")})`;
  throw new Error(`a permission node this migration does not know: ${JSON.stringify(c).slice(0, 120)}`);
}

/** Permify's SchemaDefinition (schemas/read) written back in the schema language. */
function schemaText(def: Json): string {
  const out: string[] = [];
  for (const e of Object.values(def.entity_definitions ?? {}) as Json[]) {
    const body: string[] = [];
    for (const r of Object.values(e.relations ?? {}) as Json[])
      body.push(
        `  relation ${r.name} ${(r.relation_references as Json[]).map((x) => `@${x.type}${x.relation ? `#${x.relation}` : ""}`).join(" ")}`,
      );
    for (const a of Object.values(e.attributes ?? {}) as Json[])
      body.push(`  attribute ${a.name} ${attributeTypeWord(a.type as AttributeType)}`);
    for (const p of Object.values(e.permissions ?? {}) as Json[])
      body.push(`  permission ${p.name} = ${childText(p.child).replace(/^\((.*)\)$/, "$1")}`);
    out.push(`entity ${e.name} {${body.length > 0 ? `\n${body.join("\n")}\n` : ""}}`);
  }
  for (const r of Object.values(def.rule_definitions ?? {}) as Json[]) {
    const args = Object.entries(r.arguments ?? {}).map(
      ([n, t]) => `${n} ${attributeTypeWord(t as AttributeType)}`,
    );
    out.push(`rule ${r.name}(${args.join(", ")}) {\n  ${celText(r.expression?.expr, r.name)}\n}`);
  }
  return `${out.join("\n\n")}\n`;
}

/**
 * A running Permify server, over its HTTP API: `SOURCE` is its URL, with `?tenant=` (default: --tenant) and
 * `&snap_token=` (default: its head at each read; give the token of the server's last write to read one snap).
 * The schema is schemas/read's definition written back in the schema language (or `--schema`'s file), then every
 * entity type's relationships and attributes come through the paged data/relationships/read and
 * data/attributes/read at that token.
 */
async function permifyServer(source: string, opts: MigrationOptions): Promise<MigrationSource> {
  let url: URL;
  try {
    url = new URL(source);
  } catch {
    throw new ConfigError(`--from permify: ${source} is not a URL (http://host:3476?tenant=t1)`);
  }
  const tenant = url.searchParams.get("tenant") ?? opts.tenant;
  const snapToken = url.searchParams.get("snap_token") ?? "";
  const base = `${url.origin}${url.pathname.replace(/\/$/, "")}/v1/tenants/${encodeURIComponent(tenant)}`;
  const post = async (path: string, body: unknown): Promise<Json> => {
    const r = await fetch(`${base}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const text = await r.text();
    if (!r.ok)
      throw new PembaError("ERROR_CODE_INTERNAL", `Permify ${path}: HTTP ${r.status} ${text.slice(0, 300)}`);
    return JSON.parse(text) as Json;
  };
  const definition = (await post("/schemas/read", { metadata: { schema_version: "" } })).schema as Json;
  let schema: string;
  if (opts.schemaFile !== undefined) schema = await declaredSchema(opts, "permify", "");
  else {
    try {
      schema = schemaText(definition);
    } catch (e) {
      throw new UnrepresentableError([
        `${source}: schemas/read: ${(e as Error).message} (give the schema with --schema)`,
      ]);
    }
    parseSchema(schema);
  }
  const bad: string[] = [];
  const tuples: Tuple[] = [];
  const attributes: Attribute[] = [];
  const pages = async (path: string, type: string, key: string, take: (row: Json) => void) => {
    let token = "";
    do {
      const page = await post(path, {
        metadata: { snap_token: snapToken },
        filter: { entity: { type, ids: [] } },
        page_size: 100,
        continuous_token: token,
      });
      for (const row of (page[key] ?? []) as Json[]) take(row);
      token = page.continuous_token ?? "";
    } while (token !== "");
  };
  for (const type of Object.keys(definition.entity_definitions ?? {})) {
    await pages("/data/relationships/read", type, "tuples", (t) =>
      tuples.push({
        entity: { type: t.entity.type, id: t.entity.id },
        relation: t.relation,
        subject: { type: t.subject.type, id: t.subject.id, relation: t.subject.relation ?? "" },
      }),
    );
    await pages("/data/attributes/read", type, "attributes", (a) => {
      let value: Attribute["value"];
      try {
        value = attributeValueFromWire(a.value ?? {});
      } catch {
        bad.push(
          `${source}: attribute ${a.entity.type}:${a.entity.id}$${a.attribute}: a value of type ${JSON.stringify(a.value?.["@type"])}`,
        );
        return;
      }
      attributes.push({ entity: { type: a.entity.type, id: a.entity.id }, attribute: a.attribute, value });
    });
  }
  if (bad.length > 0) throw new UnrepresentableError(bad);
  return asDump(opts.tenant, schema, tuples, attributes);
}

export const MIGRATION_SOURCES = {
  "permify-validation": permifyValidation,
  openfga,
  "zed-backup": zedBackup,
  permify: permifyServer,
} satisfies Record<string, (path: string, opts: MigrationOptions) => Promise<MigrationSource>>;

export async function migrationLines(
  kind: keyof typeof MIGRATION_SOURCES,
  path: string,
  opts: MigrationOptions,
): Promise<MigrationSource> {
  return MIGRATION_SOURCES[kind](path, opts);
}
