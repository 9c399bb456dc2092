import { describe, expect, it } from "vitest";
import { assertDeclaredWithinLimit } from "./request-body.ts";

describe("assertDeclaredWithinLimit", () => {
  const within = (declared: string | undefined, max: number) => {
    try {
      assertDeclaredWithinLimit(declared, max);
      return true;
    } catch (error) {
      expect((error as { code?: string }).code).toBe("ERROR_CODE_REQUEST_TOO_LARGE");
      return false;
    }
  };

  it("reads a Content-Length as Number() does", () => {
    const cases: [string | undefined, boolean][] = [
      [undefined, true],
      ["100", true],
      ["101", false],
      ["007", true],
      ["", true], // Number("") is 0
      [" 101", false],
      ["1e3", false],
      ["0x65", false],
      ["abc", true], // NaN is not above the limit
      ["99", true],
      ["9999999999999999", false],
      ["123456789012345", false],
    ];
    for (const [declared, ok] of cases) {
      expect([declared, within(declared, 100)]).toEqual([declared, ok]);
      if (declared !== undefined) expect(within(declared, 100)).toBe(!(Number(declared) > 100));
    }
  });
});
