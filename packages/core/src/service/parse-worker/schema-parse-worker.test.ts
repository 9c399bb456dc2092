/**
 * The worker-thread SchemaParser (Node server): a schema write's parse does not run on the event loop's
 * thread, and its answer (the definition, or the error with its class, message, code and position) is the one the
 * in-turn parse gives. The parser module's entries are counted on this thread (vi.mock wraps them; the worker thread
 * loads the real module, outside vitest): a write through the worker must not enter them here.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeEach, describe, expect, it, vi } from "vitest";
import type * as Parser from "../../schema/parser.ts";
import { MemoryStore } from "../../store/memory/memory-store.ts";
import { PembaService, type SchemaPartials } from "../pemba-service.ts";
import { MAX_SCHEMA_BYTES } from "../schema-limits.ts";
import { celHeavySchema, entitiesSchema } from "../testing/limit-schemas.ts";
import { SchemaParseWorker } from "./schema-parse-worker.ts";
import { inTurnsParser, parseInTurns } from "./schema-parser.ts";

const entered = vi.hoisted(() => ({ count: 0 }));
vi.mock("../../schema/parser.ts", async (importOriginal) => {
  const real = await importOriginal<typeof Parser>();
  const counted =
    <A extends unknown[], R>(f: (...args: A) => R) =>
    (...args: A): R => {
      entered.count++;
      return f(...args);
    };
  return {
    ...real,
    lexSchema: counted(real.lexSchema),
    parseLexedSchema: counted(real.parseLexedSchema),
    parseRawSchema: counted(real.parseRawSchema),
  };
});

const worker = new SchemaParseWorker();
afterAll(() => worker.close());
beforeEach(() => {
  entered.count = 0;
});

const BAD_SCHEMAS = [
  // parse errors: a missing brace, a duplicate, nesting over the limit, a lexer error
  "entity user {}\nentity doc {\n relation owner @user\n permission view = owner or\n}\n",
  "entity user {}\nentity doc {\n relation owner @user\n relation owner @user\n}\n",
  `entity user {}\nentity doc {\n relation a @user\n permission p = ${"(".repeat(1100)}a${")".repeat(1100)}\n}\n`,
  "entity user {}\nentity doc {\n relation owner @user ^\n}\n",
  // checks: an undefined reference, an unknown attribute type, a rule call with the wrong arguments
  "entity user {}\nentity doc {\n relation owner @user\n permission view = editor\n}\n",
  "entity user {}\nentity doc {\n attribute x wrongtype\n}\n",
  "entity user {}\nentity doc {\n attribute x integer\n permission p = r(x, x)\n}\nrule r(x integer) {\n x > 1\n}\n",
  "",
];

/** What a caller (the HTTP layer) sees of an error. */
const described = (e: unknown) => ({
  class: (e as object).constructor.name,
  ...(e as object),
  message: (e as Error).message,
});

async function errorOf(parse: Promise<unknown>): Promise<unknown> {
  return parse.then(
    () => "no error",
    (e: unknown) => described(e),
  );
}

describe("SchemaParseWorker", () => {
  it("a schema write through it does not enter the parser on this thread; the in-turn write does", async () => {
    const text = celHeavySchema(5, MAX_SCHEMA_BYTES);
    const inTurns = new PembaService(new MemoryStore());
    await inTurns.writeSchema("t1", text);
    expect(entered.count).toBeGreaterThan(0); // the instrument counts a parse on this thread

    entered.count = 0;
    const offThread = new PembaService(new MemoryStore(), { schemaParser: worker });
    await offThread.writeSchema("t1", text);
    const other = new PembaService(new MemoryStore(), { schemaParser: worker });
    await other.writeSchema("t1", entitiesSchema(5, MAX_SCHEMA_BYTES / 2));
    await other.partialWriteSchema("t1", "", {
      user: { write: ["relation friend @user"], update: [], delete: [] },
    });
    expect(entered.count).toBe(0);

    // what it wrote is what the in-turn parse reads
    expect((await offThread.readSchema("t1", "")).definition).toEqual(
      (await inTurns.readSchema("t1", "")).definition,
    );
    expect(Object.keys((await other.readSchema("t1", "")).definition.entities.user!.relations)).toEqual([
      "friend",
    ]);
  });

  it("answers the in-turn parse's definition, and its errors with the same class, message, code and position", async () => {
    const good = [celHeavySchema(9, MAX_SCHEMA_BYTES), entitiesSchema(9, 4096), celHeavySchema(2)];
    for (const text of good) expect(await worker.parse(text)).toEqual(await parseInTurns(text));
    for (const text of BAD_SCHEMAS) {
      const expected = await errorOf(parseInTurns(text));
      expect(expected).not.toBe("no error");
      expect(await errorOf(worker.parse(text))).toEqual(expected);
    }
  });

  it("applies a partial write as the in-turn parser does: the same text and definition, the same errors", async () => {
    const base = "entity user {}\nentity doc {\n relation owner @user\n}\n";
    const cases: Record<string, SchemaPartials>[] = [
      { doc: { write: ["relation editor @user"], update: [], delete: [] } },
      { doc: { write: [], update: ["relation owner @user @doc#owner"], delete: [] } },
      { nope: { write: ["relation editor @user"], update: [], delete: [] } }, // no such entity
      { doc: { write: ["relation owner @user"], update: [], delete: [] } }, // already exists
      { doc: { write: ["relation editor @"], update: [], delete: [] } }, // parse error
      { doc: { write: ["permission p = nothing"], update: [], delete: [] } }, // check error
      {
        doc: { write: [`permission p = ${Array(9000).fill("owner").join(" or ")}`], update: [], delete: [] },
      }, // > 64 KiB
    ];
    for (const partials of cases) {
      const expected = await inTurnsParser.partialWrite(base, partials).catch(described);
      expect(await worker.partialWrite(base, partials).catch(described)).toEqual(expected);
    }
  });

  it("parses texts sent at once in order, each to its own answer", async () => {
    const texts = [entitiesSchema(1, 2048), BAD_SCHEMAS[0]!, entitiesSchema(2, 2048), BAD_SCHEMAS[4]!];
    const answers = await Promise.all(
      texts.map((t) =>
        worker.parse(t).then(
          (d) => Object.keys(d.entities).length,
          (e: Error) => e.message,
        ),
      ),
    );
    expect(answers).toEqual([
      Object.keys((await parseInTurns(texts[0]!)).entities).length,
      "6:2:no prefix parse function for RCB found",
      Object.keys((await parseInTurns(texts[2]!)).entities).length,
      "4:21: undefined relation reference",
    ]);
  });

  it("close fails the parses it holds; the next parse starts a new thread", async () => {
    const own = new SchemaParseWorker();
    const refused = expect(own.parse(entitiesSchema(3))).rejects.toThrow("the schema parser is closed");
    await own.close();
    await refused;
    expect(Object.keys((await own.parse("entity user {}\n")).entities)).toEqual(["user"]);
    await own.close();
  });

  it("a pending parse keeps the process alive (a script whose only work is the parse gets its answer)", () => {
    const module = new URL("./schema-parse-worker.ts", import.meta.url).href;
    const script = `import { SchemaParseWorker } from ${JSON.stringify(module)};
const parser = new SchemaParseWorker();
const d = await parser.parse("entity user {}\\nentity doc {}\\n");
console.log(Object.keys(d.entities).join(","));
await parser.close();`;
    const dir = mkdtempSync(join(tmpdir(), "pemba-parse-"));
    try {
      writeFileSync(join(dir, "script.mjs"), script);
      const out = execFileSync(process.execPath, ["--no-warnings", join(dir, "script.mjs")], {
        encoding: "utf8",
      });
      expect(out).toBe("user,doc\n");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
