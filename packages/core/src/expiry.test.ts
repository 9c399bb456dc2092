import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { formatRfc3339, parseRfc3339 } from "./expiry.ts";

describe("RFC 3339 expires_at", () => {
  it("reads dates, fractions and offsets into UTC ms; answers them in UTC with milliseconds", () => {
    const read = (text: string) => {
      const ms = parseRfc3339(text);
      return ms === undefined ? undefined : formatRfc3339(ms);
    };
    expect(read("2030-01-02T03:04:05Z")).toBe("2030-01-02T03:04:05.000Z");
    expect(read("2030-01-02t03:04:05z")).toBe("2030-01-02T03:04:05.000Z");
    expect(read("2030-01-02T03:04:05.123456789+05:30")).toBe("2030-01-01T21:34:05.123Z");
    expect(read("2024-02-29T00:00:00Z")).toBe("2024-02-29T00:00:00.000Z");
    expect(read("2000-02-29T00:00:00Z")).toBe("2000-02-29T00:00:00.000Z");
    expect(read("0001-01-01T00:00:00Z")).toBe("0001-01-01T00:00:00.000Z");
    expect(read("0050-03-01T00:00:00Z")).toBe("0050-03-01T00:00:00.000Z");
    expect(read("9999-12-31T23:59:59.999Z")).toBe("9999-12-31T23:59:59.999Z");
    expect(read("9999-12-31T23:59:59+23:59")).toBe("9999-12-31T00:00:59.000Z");
  });

  it("refuses impossible fields instead of rolling them over, and UTC years outside 0001-9999", () => {
    for (const text of [
      "2030-02-30T00:00:00Z",
      "2023-02-29T00:00:00Z",
      "1900-02-29T00:00:00Z",
      "2030-04-31T00:00:00Z",
      "2030-13-01T00:00:00Z",
      "2030-00-10T00:00:00Z",
      "2030-01-00T00:00:00Z",
      "2030-01-01T24:00:00Z",
      "2030-01-01T23:60:00Z",
      "2030-01-01T23:59:60Z",
      "2030-01-01T00:00:00+24:00",
      "2030-01-01T00:00:00+01:60",
      "0000-06-01T00:00:00Z",
      "9999-12-31T23:59:59-23:59",
      "0001-01-01T00:30:00+01:00",
      "2030-01-01 00:00:00Z",
      "2030-01-01T00:00:00",
      "2030-01-01T00:00:00.Z",
      "2030-01-01T00:00:00.1234567890Z",
      "+010000-01-01T00:00:00Z",
    ])
      expect(parseRfc3339(text), text).toBeUndefined();
  });

  it("property: every answered form reads back as the same instant (a round trip never leaves RFC 3339)", () => {
    fc.assert(
      fc.property(
        fc.integer({
          min: new Date(0).setUTCFullYear(1, 0, 1),
          max: Date.UTC(9999, 11, 31, 23, 59, 59, 999),
        }),
        (ms) => {
          const text = formatRfc3339(ms);
          expect(text).toMatch(/^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z$/);
          expect(parseRfc3339(text)).toBe(ms);
        },
      ),
    );
  });
});
