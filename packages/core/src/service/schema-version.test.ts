import { describe, expect, it } from "vitest";
import { SchemaVersionGenerator } from "./schema-version.ts";

describe("schema version ids", () => {
  it("are 20 lowercase base32hex characters", () => {
    const id = new SchemaVersionGenerator().next();
    expect(id).toMatch(/^[0-9a-v]{20}$/);
  });

  it("increase strictly, even when the clock stands still or steps back", () => {
    let now = 1_800_000_000_000;
    const gen = new SchemaVersionGenerator(() => now);
    const ids: string[] = [];
    for (let i = 0; i < 50; i++) {
      ids.push(gen.next());
      if (i === 20) now -= 60_000;
    }
    for (let i = 1; i < ids.length; i++) expect(ids[i] > ids[i - 1]).toBe(true);
  });

  it("start with the time, like an xid", () => {
    const a = new SchemaVersionGenerator(() => 1_000_000_000_000).next();
    const b = new SchemaVersionGenerator(() => 1_000_001_000_000).next();
    expect(b > a).toBe(true);
    expect(a.slice(0, 6)).not.toBe(b.slice(0, 6));
  });
});
