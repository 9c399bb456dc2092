import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { PembaError } from "../errors.ts";
import type { SchemaDefinition } from "./ast.ts";
import { formatAttribute, formatTuple, parseAttributeString, parseTupleString } from "./notation.ts";
import { parseSchema, tryParseSchema } from "./parse-schema.ts";
import { applyPartialWrite } from "./partial.ts";
import { printSchema } from "./print.ts";

const SEEDS = [
  `entity user {
  relation self @user
  relation follower @user
  relation blocked @user
  attribute is_public boolean
  permission view = self or (is_public or follower) not blocked
}`,
  `entity user {}
entity organization {
    // roles
    relation admin @user
    relation member @user @organization#member
    action create_repository = admin or
        member
}
entity repository {
    relation parent @organization
    relation owner @user @organization#member
    permission read = (owner and (parent.admin not parent.member)) or owner
    permission delete = owner or (parent.create_repository)
}`,
  `entity user {}; entity account { relation owner @user; attribute balance double; attribute tags string[]
  permission withdraw = check_balance(balance) and owner; permission vip = is_vip(tags) }
rule check_balance(balance double) {
  (balance >= context.data.amount) && (context.data.amount <= 5000)
}
rule is_vip(tags string[]) { 'vip' in tags /* note */ }`,
];

const VOCABULARY = [
  "entity",
  "relation",
  "attribute",
  "permission",
  "action",
  "rule",
  "and",
  "or",
  "not",
  "in",
  "user",
  "doc",
  "owner",
  "x",
  "boolean",
  "string[]",
  "integer",
  "{",
  "}",
  "(",
  ")",
  "[",
  "]",
  "@",
  "#",
  ".",
  ",",
  "=",
  ":",
  ";",
  "\n",
  "\r\n",
  " ",
  "\t",
  "//c\n",
  "/*c*/",
  "/*",
  '"s"',
  '"',
  "'",
  "1",
  "2.5",
  "true",
  "é",
  "\u0000",
  "\\",
];

/** Splits text into words, runs of spaces and single other characters (mutation units). */
function pieces(text: string): string[] {
  return text.match(/[A-Za-z_]+|[0-9.]+|[ \t]+|[\s\S]/g) ?? [];
}

type Mutation =
  | { op: "delete"; at: number }
  | { op: "insert"; at: number; piece: string }
  | { op: "swap"; at: number; with: number }
  | { op: "bytes"; at: number; bytes: string };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ op: fc.constant("delete" as const), at: fc.nat() }),
  fc.record({ op: fc.constant("insert" as const), at: fc.nat(), piece: fc.constantFrom(...VOCABULARY) }),
  fc.record({ op: fc.constant("swap" as const), at: fc.nat(), with: fc.nat() }),
  fc.record({
    op: fc.constant("bytes" as const),
    at: fc.nat(),
    bytes: fc.string({ unit: "binary", maxLength: 4 }),
  }),
);

function mutate(seed: string, mutations: Mutation[]): string {
  const p = pieces(seed);
  for (const m of mutations) {
    const at = p.length === 0 ? 0 : m.at % p.length;
    if (m.op === "delete") p.splice(at, 1);
    else if (m.op === "insert") p.splice(at, 0, m.piece);
    else if (m.op === "bytes") p.splice(at, 0, m.bytes);
    else if (p.length > 0) {
      const other = m.with % p.length;
      [p[at], p[other]] = [p[other], p[at]];
    }
  }
  return p.join("");
}

const mutatedSchema = fc
  .tuple(fc.constantFrom(...SEEDS), fc.array(mutation, { minLength: 1, maxLength: 6 }))
  .map(([seed, ms]) => mutate(seed, ms));

const tokenSoup = fc.array(fc.constantFrom(...VOCABULARY), { maxLength: 60 }).map((words) => words.join(" "));

const randomText = fc.oneof(
  fc.string({ unit: "binary", maxLength: 200 }),
  fc.string({ unit: "grapheme-ascii", maxLength: 200 }),
);

const deepNesting = fc
  .tuple(
    fc.integer({ min: 0, max: 3000 }),
    fc.integer({ min: 0, max: 3000 }),
    fc.integer({ min: 0, max: 1500 }),
  )
  .map(
    ([open, close, chain]) =>
      `entity user { relation a @user\n permission p = ${"(".repeat(open)}a${" or a".repeat(chain)}${")".repeat(close)}\n}`,
  );

function withoutPositions(def: SchemaDefinition): string {
  return JSON.stringify(def, (key, value) => (key === "pos" ? undefined : value));
}

/** Every input yields a definition or a schema PembaError; accepted definitions print and parse back equal. */
function checkInput(text: string): void {
  const result = tryParseSchema(text);
  if (!result.ok) {
    expect(result.error).toBeInstanceOf(PembaError);
    expect(["ERROR_CODE_SCHEMA_PARSE", "ERROR_CODE_SCHEMA_COMPILE"]).toContain(result.error.code);
    expect(result.error.message).toMatch(/^\d+:\d+:/);
    return;
  }
  const printed = printSchema(result.schema);
  if (Object.keys(result.schema.rules).length === 0) {
    expect(withoutPositions(parseSchema(printed))).toBe(withoutPositions(result.schema));
  }
}

describe("schema parser fuzzing", () => {
  it("10,000+ random, mutated and pathological inputs: a schema or a PembaError, never a crash or a hang", () => {
    let runs = 0;
    const count = (text: string) => {
      runs++;
      checkInput(text);
    };
    fc.assert(fc.property(mutatedSchema, count), { numRuns: 5000 });
    fc.assert(fc.property(tokenSoup, count), { numRuns: 2500 });
    fc.assert(fc.property(randomText, count), { numRuns: 2500 });
    fc.assert(fc.property(deepNesting, count), { numRuns: 100 });
    for (const seed of SEEDS) count(seed);
    expect(runs).toBeGreaterThanOrEqual(10_000);
  });

  it("notation parsers and partial writes: a value or a PembaError for any string", () => {
    const base = parseSchema(SEEDS[1]);
    const notation = fc.oneof(
      fc.string({ unit: "grapheme-ascii", maxLength: 40 }),
      fc
        .array(
          fc.constantFrom(
            "doc",
            ":",
            "1",
            "#",
            "@",
            "$",
            "|",
            "owner",
            "user",
            "...",
            "boolean",
            "string[]",
            ",",
            "true",
            " ",
          ),
          {
            maxLength: 14,
          },
        )
        .map((parts) => parts.join("")),
    );
    const settle = (f: () => unknown): unknown => {
      try {
        return f();
      } catch (e) {
        expect(e).toBeInstanceOf(PembaError);
        return undefined;
      }
    };
    fc.assert(
      fc.property(notation, (text) => {
        const tuple = settle(() => parseTupleString(text));
        if (tuple !== undefined)
          expect(parseTupleString(formatTuple(tuple as ReturnType<typeof parseTupleString>))).toEqual(tuple);
        const attribute = settle(() => parseAttributeString(text));
        if (attribute !== undefined)
          expect(typeof formatAttribute(attribute as ReturnType<typeof parseAttributeString>)).toBe("string");
      }),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(tokenSoup, tokenSoup, (write, update) => {
        settle(() =>
          applyPartialWrite(base, { repository: { write: [write], update: [update], delete: [] } }),
        );
      }),
      { numRuns: 1000 },
    );
  });

  it("a huge schema (2,000 entities) parses whole (a quadratic parse would run past the test's timeout)", () => {
    const names = Array.from(
      { length: 2000 },
      (_, i) => `e${i.toString(26).replace(/[0-9]/g, (d) => "qrstuvwxyz"[Number(d)])}`,
    );
    const text = `entity user {}\n${names
      .map(
        (n) =>
          `entity ${n} {\n  relation owner @user\n  relation parent @${names[0]}\n  permission view = owner or parent.view\n}`,
      )
      .join("\n")}`;
    const def = parseSchema(text);
    expect(Object.keys(def.entities)).toHaveLength(2001);
    expect(def.entities[names[1999]!]?.permissions.view).toBeDefined();
  });
});
