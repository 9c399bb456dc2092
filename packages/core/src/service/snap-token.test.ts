import { describe, expect, it } from "vitest";
import { PembaError } from "../errors.ts";
import { decodeSnapToken, decodeSnapTokenWithBookmark, encodeSnapToken } from "./snap-token.ts";

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

  it("carry a replication bookmark after the snap; tokens without one still decode", () => {
    const bookmark = "0000000a-00000003-00004f7e-3c2a8b7f0ec8d2f2cd62d85e3ab8bfd5";
    const token = encodeSnapToken(7, bookmark);
    expect(atob(token)).toBe(`\x07${"\x00".repeat(7)}\x01${bookmark}`);
    expect(decodeSnapTokenWithBookmark(token)).toEqual({ snap: 7, bookmark });
    expect(decodeSnapToken(token)).toBe(7);
    expect(decodeSnapTokenWithBookmark("AQAAAAAAAAA=")).toEqual({ snap: 1 });
    expect(encodeSnapToken(1, undefined)).toBe("AQAAAAAAAAA=");
  });

  it("reject a bookmark part without its marker byte or with unprintable text", () => {
    for (const raw of [
      "\x01\x00\x00\x00\x00\x00\x00\x00\x03abc",
      "\x01\x00\x00\x00\x00\x00\x00\x00\x01a b",
      "\x01\x00\x00\x00\x00\x00\x00\x00\x01",
    ]) {
      expect(() => decodeSnapTokenWithBookmark(btoa(raw))).toThrow("ERROR_CODE_INVALID_SNAP_TOKEN");
    }
    expect(() => encodeSnapToken(1, "a\nb")).toThrow("unexpected replication bookmark");
  });

  it("name the database of a snap (tenants over several databases): after the bookmark, or alone", () => {
    const bookmark = "0000000a-00000003-00004f7e-3c2a8b7f0ec8d2f2cd62d85e3ab8bfd5";
    const both = encodeSnapToken(7, bookmark, "DB2");
    expect(atob(both)).toBe(`\x07${"\x00".repeat(7)}\x01${bookmark}\x02DB2`);
    expect(decodeSnapTokenWithBookmark(both)).toEqual({ snap: 7, bookmark, database: "DB2" });
    const alone = encodeSnapToken(7, undefined, "DB3");
    expect(atob(alone)).toBe(`\x07${"\x00".repeat(7)}\x02DB3`);
    expect(decodeSnapTokenWithBookmark(alone)).toEqual({ snap: 7, database: "DB3" });
    expect(decodeSnapToken(alone)).toBe(7);
    // the first database's tokens carry no name: Permify's form
    expect(encodeSnapToken(1, undefined, undefined)).toBe("AQAAAAAAAAA=");
  });

  it("reject a database part that is empty, unprintable, repeated or before the bookmark", () => {
    const snap = "\x01\x00\x00\x00\x00\x00\x00\x00";
    for (const raw of [
      `${snap}\x02`,
      `${snap}\x02a b`,
      `${snap}\x02DB2\x02DB3`,
      `${snap}\x02DB2\x01bookmark`,
      `${snap}\x01\x02DB2`,
    ]) {
      expect(() => decodeSnapTokenWithBookmark(btoa(raw)), JSON.stringify(raw)).toThrow(
        "ERROR_CODE_INVALID_SNAP_TOKEN",
      );
    }
    expect(() => encodeSnapToken(1, undefined, "a\nb")).toThrow("unexpected database name");
  });
});
