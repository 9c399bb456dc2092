import { describe, expect, it } from "vitest";
import { scanCheckBody } from "./check-body-scanner.ts";
import { parseCheckFast } from "./check-fast-path.ts";

/** The scanner's reference: JSON.parse, then the object-based fast path ("invalid" when JSON.parse throws). */
function reference(text: string) {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return "invalid";
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return undefined;
  return parseCheckFast(parsed as Record<string, unknown>);
}

const K6_BODY = JSON.stringify({
  metadata: { snap_token: "", schema_version: "d4d7lm8rqiks73cl7nkg", depth: 20 },
  entity: { type: "content", id: "4711" },
  permission: "view",
  subject: { type: "user", id: "99999" },
  page_size: 20,
});

describe("scanCheckBody", () => {
  it("reads the load test's body exactly", () => {
    expect(scanCheckBody(K6_BODY)).toEqual({
      meta: { schemaVersion: "d4d7lm8rqiks73cl7nkg", snapToken: "", depth: 20 },
      query: {
        entity: { type: "content", id: "4711" },
        permission: "view",
        subject: { type: "user", id: "99999", relation: "" },
      },
    });
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
    expect(scanCheckBody(text)).toEqual(reference(text));
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
    ["a fractional depth", K6_BODY.replace('"depth":20', '"depth":20.5')],
    ["a missing depth", K6_BODY.replace(',"depth":20', "")],
    ["an invalid id", K6_BODY.replace('"4711"', '"47 11"')],
    ["an invalid type", K6_BODY.replace('"content"', '"content1"')],
    ["a missing subject", K6_BODY.replace(',"subject":{"type":"user","id":"99999"}', "")],
    ["trailing text", `${K6_BODY} x`],
    ["a byte order mark", `\ufeff${K6_BODY}`],
    ["a trailing comma", K6_BODY.replace(',"page_size":20}', ',"page_size":20,}')],
    ["a leading zero", K6_BODY.replace('"page_size":20', '"page_size":020')],
    [
      "deep nesting in a skipped field",
      K6_BODY.replace('"page_size":20', `"x":${"[".repeat(40)}${"]".repeat(40)}`),
    ],
  ])("leaves %s to the general path", (_, text) => {
    expect(scanCheckBody(text)).toBeUndefined();
  });

  it("agrees with JSON.parse + the object fast path on 20,000 generated and mutated bodies", () => {
    let seed = 12345;
    const random = () => {
      // mulberry32
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
    const pick = <T>(items: T[]): T => items[Math.floor(random() * items.length)]!;
    const space = () => pick(["", "", " ", "\n", "\t ", "\r\n  "]);
    const strings = [
      '"view"',
      '"user"',
      '"123"',
      '"a:b@c.d+e-f_g"',
      '"*"',
      '""',
      '"x y"',
      '"é"',
      '"a\\"b"',
      "null",
    ];
    const ids = () =>
      random() < 0.85
        ? pick(['"4711"', '"a:b@c.d+e-f_g"', '"*"'])
        : pick([...strings, '"4711"', `"${"x".repeat(128)}"`, `"${"x".repeat(129)}"`, "7", "true"]);
    const names = () =>
      random() < 0.85
        ? pick(['"view"', '"content"', '"user"'])
        : pick([...strings, '"content"', `"${"n".repeat(64)}"`, `"${"n".repeat(65)}"`, '"a1"']);
    const numbers = [
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
      "30",
      "-3",
      "0",
      "007",
      "-",
      "123456789012345",
      "1234567890123456",
      "9007199254740993",
    ];
    const value = (depth: number): string =>
      depth > 2
        ? pick(["1", '"s"', "null"])
        : pick([
            () => pick(numbers),
            () => pick(strings),
            () => pick(["true", "false", "null"]),
            () =>
              `[${space()}${Array.from({ length: Math.floor(random() * 3) }, () => value(depth + 1)).join(",")}]`,
            () =>
              `{${space()}${Array.from({ length: Math.floor(random() * 3) }, () => `"k${space()}":${value(depth + 1)}`).join(",")}}`,
          ])();
    const object = (fields: [string, () => string][]) => {
      const chosen = fields.filter(() => random() < 0.97);
      if (random() < 0.2) chosen.push(["extra", () => value(0)]);
      if (random() < 0.05) chosen.push(pick(fields));
      chosen.sort(() => random() - 0.5);
      return `{${space()}${chosen.map(([k, v]) => `"${k}"${space()}:${space()}${v()}`).join(`${space()},${space()}`)}${space()}}`;
    };
    const body = () =>
      object([
        [
          "metadata",
          () =>
            object([
              ["schema_version", () => pick(['"v1"', '""', "null", "1"])],
              ["snap_token", () => pick(['"t"', '""', "null"])],
              ["depth", () => (random() < 0.85 ? "20" : pick(numbers))],
            ]),
        ],
        [
          "entity",
          () =>
            object([
              ["type", names],
              ["id", ids],
            ]),
        ],
        ["permission", names],
        [
          "subject",
          () =>
            object([
              ["type", names],
              ["id", ids],
              ["relation", names],
            ]),
        ],
        ["context", () => (random() < 0.85 ? "null" : pick(["{}", "1"]))],
        ["arguments", () => (random() < 0.85 ? "[]" : pick(["null", "[ ]", "[1]", "{}"]))],
        ["page_size", () => value(0)],
      ]);
    const mutate = (text: string) => {
      const at = Math.floor(random() * text.length);
      return pick([
        () => text.slice(0, at) + text.slice(at + 1),
        () => text.slice(0, at) + pick(['"', "{", "}", ",", ":", "\\", "\u0001", "x", " "]) + text.slice(at),
        () => text.slice(0, at),
      ])();
    };
    let accepted = 0;
    for (let i = 0; i < 20_000; i++) {
      const text = i % 4 === 3 ? mutate(body()) : body();
      const got = scanCheckBody(text);
      if (got === undefined) continue;
      accepted++;
      expect({ text, got }).toEqual({ text, got: reference(text) });
    }
    // The generator is meant to produce accepted bodies often enough for the comparison to mean something.
    expect(accepted).toBeGreaterThan(2000);
  });
});
