/**
 * The validation file ("shape") as Permify decodes it (pkg/development/file/shape.go): decoded from the YAML node
 * tree rather than from plain JS values so that every item keeps its line and every kind mismatch is reported
 * with the line it sits on (Go's yaml.v3 stops with `yaml: unmarshal errors: line N: cannot unmarshal ...`).
 * Like yaml.v3 into a struct: unknown keys are ignored, `null` is the zero value (false, "", 0, empty list).
 */

import type { Document, Node, YAMLMap } from "yaml";
import { isAlias, isMap, isScalar, isSeq, LineCounter, parseDocument } from "yaml";

/** A string of the file together with the 1-based line it was written on. */
export interface LocatedString {
  value: string;
  line: number;
}

export interface ShapeContext {
  tuples: LocatedString[];
  attributes: LocatedString[];
  data: Record<string, unknown>;
}

interface ShapeQuery {
  /** 0 when absent (= the default depth). */
  depth: number;
  context: ShapeContext;
  line: number;
  /** Keys the format does not know, as plain values (e.g. an engine case's `scope_UNSUPPORTED_IN_YAML`). */
  extra: Record<string, unknown>;
}

export interface ShapeCheck extends ShapeQuery {
  entity: string;
  subject: string;
  /** permission -> expected (true = ALLOWED), in file order; YAML null decodes as false. */
  assertions: { permission: string; expected: boolean; line: number }[];
}

export interface ShapeEntityFilter extends ShapeQuery {
  entityType: string;
  subject: string;
  assertions: { permission: string; expected: string[]; line: number }[];
}

export interface ShapeSubjectFilter extends ShapeQuery {
  subjectReference: string;
  entity: string;
  assertions: { permission: string; expected: string[]; line: number }[];
}

export interface ShapeScenario {
  name: string;
  description: string;
  line: number;
  checks: ShapeCheck[];
  entityFilters: ShapeEntityFilter[];
  subjectFilters: ShapeSubjectFilter[];
}

export interface Shape {
  schema: string;
  /** Line of the `schema` value (1 when absent). */
  schemaLine: number;
  /** Written as a `|` block: line N of the schema text is line `schemaLine + N` of the file. */
  schemaIsLiteralBlock: boolean;
  relationships: LocatedString[];
  attributes: LocatedString[];
  scenarios: ShapeScenario[];
}

/** The file cannot be decoded: YAML syntax errors or values of the wrong kind, each naming its line. */
export class ShapeFormatError extends Error {
  readonly problems: { line: number; message: string }[];
  constructor(problems: { line: number; message: string }[]) {
    super(`invalid validation file:\n${problems.map((p) => `  line ${p.line}: ${p.message}`).join("\n")}`);
    this.name = "ShapeFormatError";
    this.problems = problems;
  }
}

type Maybe = Node | null | undefined;

function kindOf(node: Node): string {
  if (isMap(node)) return "a mapping";
  if (isSeq(node)) return "a list";
  if (isScalar(node)) {
    const v = node.value;
    if (typeof v === "string") return `the string ${JSON.stringify(v)}`;
    return `the ${typeof v} ${String(v)}`;
  }
  return "an unsupported node";
}

/** Walks the YAML node tree, collecting every kind mismatch instead of stopping at the first. */
class ShapeDecoder {
  readonly problems: { line: number; message: string }[] = [];
  private readonly doc: Document;
  private readonly lines: LineCounter;

  constructor(doc: Document, lines: LineCounter) {
    this.doc = doc;
    this.lines = lines;
  }

  line(node: Maybe, fallback = 1): number {
    const start = node?.range?.[0];
    return start === undefined ? fallback : this.lines.linePos(start).line;
  }

  private resolve(node: Maybe): Node | null {
    if (node == null) return null;
    const target = isAlias(node) ? node.resolve(this.doc) : node;
    if (target == null) return null;
    if (isScalar(target) && target.value === null) return null;
    return target as Node;
  }

  private wrongKind(node: Node, what: string, expected: string): void {
    this.problems.push({
      line: this.line(node),
      message: `${what} must be ${expected}, not ${kindOf(node)}`,
    });
  }

  /** A YAML mapping as [key, value, keyNode] entries; null -> []. */
  entries(node: Maybe, what: string, expected = "a mapping"): { key: string; value: Maybe; line: number }[] {
    const n = this.resolve(node);
    if (n === null) return [];
    if (!isMap(n)) {
      this.wrongKind(n, what, expected);
      return [];
    }
    const out: { key: string; value: Maybe; line: number }[] = [];
    for (const pair of (n as YAMLMap<unknown, unknown>).items) {
      const key = this.resolve(pair.key as Maybe);
      if (key === null || !isScalar(key)) continue;
      out.push({ key: String(key.value), value: pair.value as Maybe, line: this.line(key) });
    }
    return out;
  }

  field(node: Maybe, key: string): Maybe {
    const n = this.resolve(node);
    if (n === null || !isMap(n)) return undefined;
    for (const pair of n.items) {
      const k = this.resolve(pair.key as Maybe);
      if (k !== null && isScalar(k) && String(k.value) === key) return pair.value as Maybe;
    }
    return undefined;
  }

  items(node: Maybe, what: string, expected: string): Node[] {
    const n = this.resolve(node);
    if (n === null) return [];
    if (!isSeq(n)) {
      this.wrongKind(n, what, expected);
      return [];
    }
    return n.items as Node[];
  }

  /** Any scalar decodes into a string field with its source text (yaml.v3); null -> "". */
  str(node: Maybe, what: string): string {
    const n = this.resolve(node);
    if (n === null) return "";
    if (!isScalar(n)) {
      this.wrongKind(n, what, "a string");
      return "";
    }
    return typeof n.value === "string" ? n.value : (n.source ?? String(n.value));
  }

  strings(node: Maybe, what: string): LocatedString[] {
    return this.items(node, what, "a list of strings").map((item, i) => ({
      value: this.str(item, `${what}[${i}]`),
      line: this.line(item),
    }));
  }

  bool(node: Maybe, what: string): boolean {
    const n = this.resolve(node);
    if (n === null) return false;
    if (isScalar(n)) {
      if (typeof n.value === "boolean") return n.value;
      // yaml.v3 keeps YAML 1.1 spellings for bool fields.
      const s = String(n.value);
      if (["y", "Y", "yes", "Yes", "YES", "on", "On", "ON"].includes(s)) return true;
      if (["n", "N", "no", "No", "NO", "off", "Off", "OFF"].includes(s)) return false;
    }
    this.wrongKind(n, what, "true or false");
    return false;
  }

  int(node: Maybe, what: string): number {
    const n = this.resolve(node);
    if (n === null) return 0;
    if (isScalar(n) && typeof n.value === "number" && Number.isInteger(n.value)) return n.value;
    this.wrongKind(n, what, "an integer");
    return 0;
  }

  context(node: Maybe, what: string): ShapeContext {
    const n = this.resolve(node);
    const context: ShapeContext = { tuples: [], attributes: [], data: {} };
    if (n === null) return context;
    if (!isMap(n)) {
      this.wrongKind(n, what, "a mapping with `tuples`, `attributes` and `data` keys");
      return context;
    }
    context.tuples = this.strings(this.field(n, "tuples"), `${what}.tuples`);
    context.attributes = this.strings(this.field(n, "attributes"), `${what}.attributes`);
    const data = this.resolve(this.field(n, "data"));
    if (data !== null) {
      if (isMap(data)) context.data = data.toJS(this.doc) as Record<string, unknown>;
      else this.wrongKind(data, `${what}.data`, "a mapping");
    }
    return context;
  }

  query(node: Node, what: string, known: string[]): ShapeQuery {
    const extra: Record<string, unknown> = {};
    for (const e of this.entries(node, what)) {
      if (!known.includes(e.key)) extra[e.key] = this.resolve(e.value)?.toJS(this.doc) ?? null;
    }
    return {
      depth: this.int(this.field(node, "depth"), `${what}.depth`),
      context: this.context(this.field(node, "context"), `${what}.context`),
      line: this.line(node),
      extra,
    };
  }

  idAssertions(node: Maybe, what: string): { permission: string; expected: string[]; line: number }[] {
    return this.entries(node, what, "a mapping of permission -> list of ids").map((e) => ({
      permission: e.key,
      expected: this.strings(e.value, `${what}.${e.key}`).map((s) => s.value),
      line: e.line,
    }));
  }

  check(node: Node, what: string): ShapeCheck {
    const base = this.query(node, what, ["entity", "subject", "depth", "context", "assertions"]);
    const assertions = this.entries(
      this.field(node, "assertions"),
      `${what}.assertions`,
      "a mapping of permission -> true/false",
    ).map((e) => ({
      permission: e.key,
      expected: this.bool(e.value, `${what}.assertions.${e.key}`),
      line: e.line,
    }));
    return {
      ...base,
      entity: this.str(this.field(node, "entity"), `${what}.entity`),
      subject: this.str(this.field(node, "subject"), `${what}.subject`),
      assertions,
    };
  }

  entityFilter(node: Node, what: string): ShapeEntityFilter {
    const base = this.query(node, what, ["entity_type", "subject", "depth", "context", "assertions"]);
    return {
      ...base,
      entityType: this.str(this.field(node, "entity_type"), `${what}.entity_type`),
      subject: this.str(this.field(node, "subject"), `${what}.subject`),
      assertions: this.idAssertions(this.field(node, "assertions"), `${what}.assertions`),
    };
  }

  subjectFilter(node: Node, what: string): ShapeSubjectFilter {
    const base = this.query(node, what, ["subject_reference", "entity", "depth", "context", "assertions"]);
    return {
      ...base,
      subjectReference: this.str(this.field(node, "subject_reference"), `${what}.subject_reference`),
      entity: this.str(this.field(node, "entity"), `${what}.entity`),
      assertions: this.idAssertions(this.field(node, "assertions"), `${what}.assertions`),
    };
  }

  scenario(node: Node, what: string): ShapeScenario {
    this.entries(node, what); // reports a scenario that is not a mapping
    const list = <T>(key: string, expected: string, decode: (n: Node, w: string) => T): T[] =>
      this.items(this.field(node, key), `${what}.${key}`, expected).map((n, i) =>
        decode(n, `${what}.${key}[${i}]`),
      );
    return {
      name: this.str(this.field(node, "name"), `${what}.name`),
      description: this.str(this.field(node, "description"), `${what}.description`),
      line: this.line(node),
      checks: list("checks", "a list of checks", (n, w) => this.check(n, w)),
      entityFilters: list("entity_filters", "a list of entity filters", (n, w) => this.entityFilter(n, w)),
      subjectFilters: list("subject_filters", "a list of subject filters", (n, w) =>
        this.subjectFilter(n, w),
      ),
    };
  }

  shape(root: Maybe): Shape {
    this.entries(root, "the file", "a mapping with `schema`, `relationships`, `attributes` and `scenarios`");
    const schemaNode = this.field(root, "schema");
    return {
      schema: this.str(schemaNode, "schema"),
      schemaLine: this.line(schemaNode),
      schemaIsLiteralBlock: isScalar(schemaNode) && schemaNode.type === "BLOCK_LITERAL",
      relationships: this.strings(this.field(root, "relationships"), "relationships"),
      attributes: this.strings(this.field(root, "attributes"), "attributes"),
      scenarios: this.items(this.field(root, "scenarios"), "scenarios", "a list of scenarios").map((n, i) =>
        this.scenario(n, `scenarios[${i}]`),
      ),
    };
  }
}

/** Decodes a validation file; throws ShapeFormatError (naming every offending line) when it cannot. */
export function decodeShape(text: string): Shape {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false });
  if (doc.errors.length > 0) {
    throw new ShapeFormatError(
      doc.errors.map((e) => ({
        line: e.linePos?.[0]?.line ?? lines.linePos(e.pos[0]).line,
        message: e.message,
      })),
    );
  }
  const decoder = new ShapeDecoder(doc, lines);
  const shape = decoder.shape(doc.contents);
  if (decoder.problems.length > 0)
    throw new ShapeFormatError([...decoder.problems].sort((a, b) => a.line - b.line));
  return shape;
}
