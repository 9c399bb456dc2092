import { describe, expect, it } from "vitest";
import { PembaError } from "../errors.ts";
import { decodeSnapToken, encodeSnapToken } from "./snap-token.ts";

describe("snap tokens", () => {
  it("encode a tx id as base64 of a little-endian uint64", () => {
    expect(encodeSnapToken(1)).toBe("AQAAAAAAAAA=");
    expect(encodeSnapToken(0x0102)).toBe("AgEAAAAAAAA=");
  });

  it("round-trip", () => {
    for (const snap of [0, 1, 255, 256, 65_537, 2 ** 40 + 3, Number.MAX_SAFE_INTEGER]) {
      expect(decodeSnapToken(encodeSnapToken(snap))).toBe(snap);
    }
  });

  it("refuse ids beyond 2^53 (e.g. a Permify memory-engine token holding unix nanos)", () => {
    expect(() => decodeSnapToken("S7Dy0w9X6hg=")).toThrow("ERROR_CODE_INVALID_SNAP_TOKEN");
  });

  it("reject garbage with ERROR_CODE_INVALID_SNAP_TOKEN", () => {
    for (const bad of ["garbage!", "AQ==", "AQAAAAAAAAAAAA==", "////////////"]) {
      try {
        decodeSnapToken(bad);
        expect.unreachable(bad);
      } catch (e) {
        expect(e).toBeInstanceOf(PembaError);
        expect((e as PembaError).toJSON()).toEqual({
          code: 3,
          message: "ERROR_CODE_INVALID_SNAP_TOKEN",
          details: [],
        });
      }
    }
  });
});
