import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { PermissionCheckRequestSchema } from "../wire/permission.ts";
import { parseWire } from "../wire/pgv.ts";
import { type ScannedCheck, scanCheckBody } from "./check-body-scanner.ts";
import { parseJsonText } from "./request-body.ts";
import { checkReading, K6_CHECK } from "./testing/check-reading.ts";

/** What zod (the definition of a valid check request) makes of a body text; "refused" when it throws. */
function zodReading(text: string): ScannedCheck | "refused" {
  try {
    const r = parseWire(PermissionCheckRequestSchema, parseJsonText(text));
    const context = r.context;
    const hasContext =
      context !== undefined &&
      (context.tuples.length > 0 || context.attributes.length > 0 || Object.keys(context.data).length > 0);
    if (hasContext || r.arguments.length > 0) return "refused"; // the scanner never takes these
    return checkReading(r);
  } catch {
    return "refused";
  }
}

const K6_BODY = JSON.stringify({ ...K6_CHECK, page_size: 20 });

describe("scanCheckBody (a fast path of zod's check request schema)", () => {
  it("reads the load test's body exactly as zod does", () => {
    const expected = {
      meta: { schemaVersion: "d4d7lm8rqiks73cl7nkg", snapToken: "", depth: 20 },
      query: {
        entity: { type: "content", id: "4711" },
        permission: "view",
        subject: { type: "user", id: "99999", relation: "" },
      },
    };
    expect(scanCheckBody(K6_BODY)).toEqual(expected);
    expect(zodReading(K6_BODY)).toEqual(expected);
  });

  it("reads whitespace, key order, nulls, subject relations, empty arguments and skipped fields", () => {
    const text = ` \r\n\t{ "unknown" : { "a" : [ 1, -2.5e+3, true, false, null, "x", {} , [] ] } ,
      "subject": {"relation": "member", "id": "alice@example.com", "type": "group", "x": 1},
      "permission": "edit", "arguments": [ ], "context": null,
      "entity": {"id": "*", "type": "doc_x"},
      "metadata": {"schema_version": null, "snap_token": "abc", "depth": 3e0} } \n`;
    expect(scanCheckBody(text)).toEqual({
      meta: { schemaVersion: "", snapToken: "abc", depth: 3 },
      query: {
        entity: { type: "doc_x", id: "*" },
        permission: "edit",
        subject: { type: "group", id: "alice@example.com", relation: "member" },
      },
    });
    expect(scanCheckBody(text)).toEqual(zodReading(text));
  });

  it.each([
    ["escapes in a string", K6_BODY.replace('"view"', '"vi\\u0065w"')],
    ["a duplicate key", K6_BODY.replace('"permission"', '"permission":"edit","permission"')],
    ["a context", K6_BODY.replace('"page_size"', '"context":{"tuples":[]},"page_size"')],
    [
      "arguments",
      K6_BODY.replace('"page_size"', '"arguments":[{"computed_attribute":{"name":"x"}}],"page_size"'),
    ],
    ["depth below 3", K6_BODY.replace('"depth":20', '"depth":2')],
    ["depth above int32", K6_BODY.replace('"depth":20', '"depth":2147483648')],
    ["a depth as a string", K6_BODY.replace('"depth":20', '"depth":"20"')],
    ["a fractional depth", K6_BODY.replace('"depth":20', '"depth":20.5')],
    ["a missing depth", K6_BODY.replace(',"depth":20', "")],
    ["an invalid id", K6_BODY.replace('"4711"', '"47 11"')],
    ["an invalid type", K6_BODY.replace('"content"', '"content1"')],
    ["a raw U+007F in a type", K6_BODY.replace('"content"', '"content\u007f"')],
    ["a missing subject", K6_BODY.replace(',"subject":{"type":"user","id":"99999"}', "")],
    ["trailing text", `${K6_BODY} x`],
    ["a byte order mark", `\ufeff${K6_BODY}`],
    ["a trailing comma", K6_BODY.replace(',"page_size":20}', ',"page_size":20,}')],
    ["a leading zero", K6_BODY.replace('"page_size":20', '"page_size":020')],
    [
      "deep nesting in a skipped field",
      K6_BODY.replace('"page_size":20', `"x":${"[".repeat(40)}${"]".repeat(40)}`),
    ],
  ])("leaves %s to zod", (_, text) => {
    expect(scanCheckBody(text)).toBeUndefined();
  });

  // Bodies built from the check request's fields, mostly valid, with odd values, extra and repeated fields,
  // whitespace, key order and single-character mutations.
  const space = fc.constantFrom("", "", " ", "\n", "\t ", "\r\n  ");
  const oddStrings = ['"x y"', '"é"', '"a\\"b"', '"\u007f"', '""', "null", "7", "true", '"a1"', '"*"'];
  const name = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom('"view"', '"content"', '"user"', '"doc_x"') },
    {
      weight: 1,
      arbitrary: fc.constantFrom(...oddStrings, `"${"n".repeat(64)}"`, `"${"n".repeat(65)}"`),
    },
  );
  const id = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom('"4711"', '"a:b@c.d+e-f_g"', '"*"') },
    {
      weight: 1,
      arbitrary: fc.constantFrom(...oddStrings, `"${"x".repeat(128)}"`, `"${"x".repeat(129)}"`),
    },
  );
  const number = fc.constantFrom(
    "20",
    "3",
    "2",
    "-0",
    "3.0",
    "2e1",
    "1E+1",
    "20.5",
    "1e300",
    "2147483647",
    "2147483648",
    '"20"',
    "-3",
    "0",
    "007",
    "-",
    "123456789012345",
    "1234567890123456",
    "9007199254740993",
  );
  const json = fc.letrec((tie) => ({
    value: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      number,
      fc.constantFrom('"s"', "true", "false", "null"),
      fc.array(tie("value"), { maxLength: 3 }).map((items) => `[${items.join(",")}]`),
      fc
        .array(fc.tuple(fc.constantFrom("k", "a", "metadata"), tie("value")), { maxLength: 3 })
        .map((entries) => `{${entries.map(([k, v]) => `"${k}":${v}`).join(",")}}`),
    ),
  })).value;
  type Field = [string, fc.Arbitrary<string>];
  const object = (fields: Field[]) =>
    fc
      .tuple(
        fc.oneof(
          { weight: 9, arbitrary: fc.constant(fields) },
          { weight: 1, arbitrary: fc.subarray(fields, { minLength: Math.max(0, fields.length - 1) }) },
        ),
        fc.oneof({ weight: 4, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: json }),
        fc.oneof(
          { weight: 19, arbitrary: fc.constant(null) },
          { weight: 1, arbitrary: fc.constantFrom(...fields) },
        ),
        fc.array(space, { minLength: 4, maxLength: 4 }),
        fc.integer(),
      )
      .chain(([chosen, extra, repeated, [s1, s2, s3, s4], seed]) => {
        const all: Field[] = [...chosen];
        if (extra !== null) all.push(["extra", fc.constant(extra)]);
        if (repeated !== null) all.push(repeated);
        const order = all.map((f, i) => [f, (i * 7919 + seed) % 13] as const).sort((a, b) => a[1] - b[1]);
        return fc
          .tuple(...order.map(([[, v]]) => v))
          .map(
            (values) =>
              `{${s1}${order.map(([[k]], i) => `"${k}"${s2}:${s3}${values[i]}`).join(`${s4},`)}${s1}}`,
          );
      });
  const body = object([
    [
      "metadata",
      object([
        ["schema_version", fc.constantFrom('"v1"', '""', "null", "1")],
        ["snap_token", fc.constantFrom('"t"', '""', "null")],
        ["depth", fc.oneof({ weight: 6, arbitrary: fc.constant("20") }, { weight: 1, arbitrary: number })],
      ]),
    ],
    [
      "entity",
      object([
        ["type", name],
        ["id", id],
      ]),
    ],
    ["permission", name],
    [
      "subject",
      object([
        ["type", name],
        ["id", id],
        ["relation", name],
      ]),
    ],
    [
      "context",
      fc.oneof(
        { weight: 9, arbitrary: fc.constant("null") },
        { weight: 1, arbitrary: fc.constantFrom("{}", "1", '{"tuples":[]}') },
      ),
    ],
    [
      "arguments",
      fc.oneof(
        { weight: 9, arbitrary: fc.constantFrom("[]", "null", "[ ]") },
        { weight: 1, arbitrary: fc.constantFrom("[1]", "{}") },
      ),
    ],
    ["page_size", json],
  ]);
  const mutated = fc
    .tuple(
      body,
      fc.nat(),
      fc.constantFrom("delete", "insert", "cut"),
      fc.constantFrom('"', "{", "}", ",", ":", "\\", "\u0001", "x", " "),
    )
    .map(([text, n, op, ch]) => {
      const at = n % (text.length + 1);
      if (op === "delete") return text.slice(0, at) + text.slice(at + 1);
      if (op === "insert") return text.slice(0, at) + ch + text.slice(at);
      return text.slice(0, at);
    });

  it("property: whatever the scanner accepts, zod accepts and reads the same (generated and mutated bodies)", () => {
    let accepted = 0;
    fc.assert(
      fc.property(fc.oneof({ weight: 3, arbitrary: body }, { weight: 1, arbitrary: mutated }), (text) => {
        const scanned = scanCheckBody(text);
        if (scanned === undefined) return;
        accepted++;
        expect({ text, reading: zodReading(text) }).toEqual({ text, reading: scanned });
      }),
      { numRuns: 20_000, seed: 20261125 },
    );
    // The generator is meant to produce accepted bodies often enough for the comparison to mean something.
    expect(accepted).toBeGreaterThan(2000);
  });
});
