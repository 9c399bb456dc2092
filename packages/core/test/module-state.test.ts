/**
 * No module-level mutable state in @pemba/core: per-request and per-service state lives in objects their owners
 * hold (EvaluationPool, a scanner per call, a RuleMeter per compiled rule), so two services or two requests in one
 * process never share it. A module-level `let`/`var` fails this test; a module-level Map/Set must be a lookup table
 * filled while the module loads and only read afterwards, listed here with why. The one process-wide setting is
 * shared-work.ts's `runtime`: the runtime's rule for work that requests share, installed once per isolate by the
 * Worker's entry (it is the runtime's, the same for every service).
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";

const SRC = join(import.meta.dirname, "../src");

/** Module-level collections that are filled at load time and never written after. */
const LOOKUP_TABLES = [
  "dump/reader.ts: ATTRIBUTE_TYPES", // the dump format's value types
  "dump/reader.ts: ATTRIBUTE_KEYS", // the fields each dump record may have
  "dump/reader.ts: HEADER_KEYS",
  "dump/reader.ts: SCHEMA_KEYS",
  "dump/reader.ts: TRAILER_KEYS",
  "dump/reader.ts: TUPLE_KEYS",
  "engine/explain-format.ts: OPERATIONS", // proof node kinds printed as operations
  "grpc/transport.ts: PATH_FIELDS", // the request fields each RPC's route takes from its path, built at load
  "http/pipeline.ts: AUTHENTICATION_ERRORS", // error codes AuthZEN answers with 401
  "http/route-table.ts: PARAM_NAMES", // the path parameter names of each route in the table, built at load
  "rules/cel-rule.ts: ARITHMETIC", // CEL operator names
  "schema/lexer.ts: IGNORED", // token kinds the parser skips
  "schema/parser-tokens.ts: KNOWN_KINDS", // the token kinds the lexer defines
  "schema/parser.ts: CONTINUATIONS", // token names that continue an expression on the next line
  "service/testing/statement-counts.ts: SNAP_KINDS", // test support: statement kinds
  "service/testing/statement-counts.ts: READ_KINDS",
  "wire/pgv.ts: messageNames", // proto message names of the wire schemas, set while those modules load
];

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return sources(path);
    return entry.endsWith(".ts") && !entry.endsWith(".test.ts") ? [path] : [];
  });
}

describe("module-level state in @pemba/core", () => {
  const files = sources(SRC).map((path) => ({ name: relative(SRC, path), text: readFileSync(path, "utf8") }));

  it("no module-level let or var", () => {
    const found = files.flatMap(({ name, text }) =>
      [...text.matchAll(/^(?:export )?(?:let|var) (\w+)/gm)].map((m) => `${name}: ${m[1]}`),
    );
    expect(found).toEqual([]);
  });

  it("module-level collections are the listed lookup tables only", () => {
    const found = files.flatMap(({ name, text }) =>
      [...text.matchAll(/^(?:export )?const (\w+)(?:: [^=]+)? = new (?:Map|Set|WeakMap|WeakSet)\b/gm)].map(
        (m) => `${name}: ${m[1]}`,
      ),
    );
    expect(found.sort()).toEqual([...LOOKUP_TABLES].sort());
  });
});
