/**
 * Bounded schema writes over HTTP: a schema over the size limits is refused with an error naming the
 * limit before it is parsed or compiled; a rule body that would overflow the stack is a compile error naming the
 * limit; declared names follow the API's 64-character rule. Nothing is written by a refused schema.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_CEL_DEPTH } from "../rules/cel-limits.ts";
import { MAX_SCHEMA_BYTES, MAX_SCHEMA_RULE_CHARS } from "../service/schema-limits.ts";
import { letterName } from "../service/testing/limit-schemas.ts";
import { startTestServer, type TestServer } from "./testing/harness.ts";

const S = "/v1/tenants/t1/schemas";
const HEAD = "entity user {}\nentity doc {\n attribute x integer\n}\n";
const ruleSchema = (body: string) => `${HEAD}rule r(x integer) {\n ${body}\n}\n`;
/** `text` padded with a trailing comment to exactly `bytes` UTF-8 bytes. */
const padded = (text: string, bytes: number, fill = "a") => {
  const room = bytes - Buffer.byteLength(text) - 3;
  return `${text}//${fill.repeat(Math.floor(room / Buffer.byteLength(fill)))}${"b".repeat(room % Buffer.byteLength(fill))}\n`;
};

describe("schema write limits", () => {
  let s: TestServer;
  let head: string;
  beforeAll(async () => {
    s = await startTestServer();
    const r = await s.call(`${S}/write`, { schema: HEAD });
    head = (r.body as { schema_version: string }).schema_version;
  });
  afterAll(() => s.close());

  const write = (schema: string) => s.call(`${S}/write`, { schema });
  const compileError = (message: string) => ({ status: 500, body: { code: 13, message, details: [] } });
  const headNow = async () => ((await s.call(`${S}/list`, { page_size: 1 })).body as { head: string }).head;

  it(`a schema of ${MAX_SCHEMA_BYTES} bytes is written; one byte more is 400, naming the limit`, async () => {
    const tooLarge = {
      status: 400,
      body: {
        code: 3,
        message: `invalid SchemaWriteRequest.Schema: value length must be at most ${MAX_SCHEMA_BYTES} bytes`,
        details: [],
      },
    };
    expect(await write(padded(HEAD, MAX_SCHEMA_BYTES + 1))).toMatchObject(tooLarge);
    // bytes, not characters: 2-byte characters count twice
    const wide = padded(HEAD, MAX_SCHEMA_BYTES + 1, "é");
    expect(wide.length).toBeLessThan(MAX_SCHEMA_BYTES);
    expect(await write(wide)).toMatchObject(tooLarge);
    expect(await write(padded(HEAD, 300 * 1024))).toMatchObject(tooLarge);
    // probes of each limit: 3.4 MiB of rule, 80,000 entities, 300,000 nested parentheses; their bodies are over
    // what an admissible schema can take as JSON, so they are refused before the body is read or parsed
    const bodyTooLarge = {
      status: 413,
      body: { code: 8, message: "ERROR_CODE_REQUEST_TOO_LARGE", details: [] },
    };
    const chain = Array.from({ length: 400_000 }, () => "x > 1").join(" && ");
    expect(await write(ruleSchema(chain))).toMatchObject(bodyTooLarge);
    const entities = Array.from({ length: 80_000 }, (_, i) => `entity e_${letterName(i)} {}`).join("\n");
    expect(await write(entities)).toMatchObject(bodyTooLarge);
    const parens = `${HEAD}entity d {\n relation a @user\n permission p = ${"(".repeat(300_000)}a${")".repeat(300_000)}\n}`;
    expect(await write(parens)).toMatchObject(bodyTooLarge);
    expect(await headNow()).toBe(head);
    const exact = await write(padded(HEAD, MAX_SCHEMA_BYTES));
    expect(exact.status).toBe(200);
    head = (exact.body as { schema_version: string }).schema_version;
  });

  it(`rule bodies of ${MAX_SCHEMA_RULE_CHARS} characters in all compile; one more is a compile error`, async () => {
    const rules = (total: number) => {
      const bodies: string[] = [];
      for (let left = total; left > 0; ) {
        const n = Math.min(1000, left);
        bodies.push(`x > 1.${"0".repeat(n - 6)}`);
        left -= n;
      }
      return `${HEAD}${bodies.map((b, i) => `rule r_${letterName(i)}(x integer) {\n${b}\n}`).join("\n")}\n`;
    };
    const over = rules(MAX_SCHEMA_RULE_CHARS + 1);
    const lastRuleLine = over.split("\n").length - 3;
    expect(await write(over)).toMatchObject(
      compileError(`${lastRuleLine}:7: rule bodies exceed ${MAX_SCHEMA_RULE_CHARS} characters in one schema`),
    );
    expect(await headNow()).toBe(head);
    const r = await write(rules(MAX_SCHEMA_RULE_CHARS));
    expect(r.body).toEqual({ schema_version: expect.any(String) });
    head = (r.body as { schema_version: string }).schema_version;
  });

  it("bodies that overflowed the stack (500 Maximum call stack size exceeded) are compile errors naming the limit", async () => {
    const recursion = compileError(`5:7: expression recursion limit exceeded: ${MAX_CEL_DEPTH}`);
    expect(await write(ruleSchema(`${"(".repeat(1000)}x > 1${")".repeat(1000)}`))).toMatchObject(recursion);
    expect(await write(ruleSchema(`x${" + 1".repeat(300)} > 1`))).toMatchObject(recursion);
    expect(await write(ruleSchema(`context.data${".a".repeat(300)} == 1`))).toMatchObject(recursion);
    // larger versions of them are over the size limits, refused before any parsing
    expect(await write(ruleSchema(`x${" + 1".repeat(10_000)} > 1`))).toMatchObject(
      compileError(`5:7: rule bodies exceed ${MAX_SCHEMA_RULE_CHARS} characters in one schema`),
    );
    expect((await write(ruleSchema(`"${"a".repeat(1_000_000)}" == "a"`))).status).toBe(413);
    expect(await headNow()).toBe(head);
  });

  it("a declared name over 64 characters is a compile error; 64 are written", async () => {
    expect(await write(`entity ${"u".repeat(65)} {}`)).toMatchObject(
      compileError("1:9: name longer than 64 characters (65)"),
    );
    expect(await headNow()).toBe(head);
    expect((await write(`entity ${"u".repeat(64)} {}`)).status).toBe(200);
  });
});
