import { describe, expect, it, vi } from "vitest";
import type { PembaError } from "../errors.ts";
import type { Tuple } from "../model.ts";
import { MemoryStore } from "../store/memory/memory-store.ts";
import { PembaService } from "./pemba-service.ts";

const SCHEMA = `entity user {}
entity document {
  relation owner @user
  attribute public boolean
  permission view = owner or public
}`;

const t = (doc: string, user: string): Tuple => ({
  entity: { type: "document", id: doc },
  relation: "owner",
  subject: { type: "user", id: user, relation: "" },
});
const meta = { schemaVersion: "", snapToken: "", depth: 10 };

async function errorOf(p: unknown): Promise<PembaError> {
  try {
    await p;
  } catch (e) {
    return e as PembaError;
  }
  throw new Error("expected an error");
}

describe("PembaService", () => {
  it("compiles each schema version once and caches it (head and explicit version are the same object)", async () => {
    const service = new PembaService(new MemoryStore());
    const version = await service.writeSchema("t1", SCHEMA);
    const head = await service.resolveSchema("t1", "");
    const byVersion = await service.resolveSchema("t1", version);
    expect(head).toBe(byVersion);
    expect(head.version).toBe(version);
    // A second service on the same store compiles it once from storage, then serves it from its cache.
    const other = new PembaService(service.store);
    const [a, b] = await Promise.all([
      other.resolveSchema("t1", version),
      other.resolveSchema("t1", version),
    ]);
    expect(a).toBe(b);
    expect(a.compiled).not.toBe(head.compiled);
  });

  it("unknown schema version / tenant without schema -> ERROR_CODE_SCHEMA_NOT_FOUND", async () => {
    const service = new PembaService(new MemoryStore());
    expect((await errorOf(service.resolveSchema("t1", ""))).message).toBe("ERROR_CODE_SCHEMA_NOT_FOUND");
    await service.writeSchema("t1", SCHEMA);
    expect((await errorOf(service.resolveSchema("t1", "c0000000000000000000"))).message).toBe(
      "ERROR_CODE_SCHEMA_NOT_FOUND",
    );
  });

  it("a data write validates everything first: one bad tuple writes nothing", async () => {
    const service = new PembaService(new MemoryStore());
    await service.writeSchema("t1", SCHEMA);
    const bad: Tuple = { ...t("1", "1"), relation: "editor" };
    const e = await errorOf(service.writeData("t1", "", [t("1", "1"), bad], []));
    expect(e.message).toBe("ERROR_CODE_RELATION_DEFINITION_NOT_FOUND");
    const page = await service.readRelationships("t1", "", {}, 100, "");
    expect(page.items).toEqual([]);
  });

  it("duplicate tuples in one write are written once; snap tokens read the past", async () => {
    const service = new PembaService(new MemoryStore());
    await service.writeSchema("t1", SCHEMA);
    const first = await service.writeData("t1", "", [t("1", "1"), t("1", "1")], []);
    await service.writeData("t1", "", [t("2", "1")], []);
    expect((await service.readRelationships("t1", first, {}, 100, "")).items).toEqual([t("1", "1")]);
    expect((await service.readRelationships("t1", "", {}, 100, "")).items).toHaveLength(2);
    const check = (snapToken: string) =>
      service.check(
        "t1",
        { ...meta, snapToken },
        { entity: t("2", "1").entity, permission: "view", subject: t("2", "1").subject },
      );
    expect((await check("")).can).toBe("CHECK_RESULT_ALLOWED");
    expect((await check(first)).can).toBe("CHECK_RESULT_DENIED");
  });

  it("snap tokens: garbage -> ERROR_CODE_INVALID_SNAP_TOKEN", async () => {
    const service = new PembaService(new MemoryStore());
    const e = await errorOf((async () => service.resolveSnap("t1", "%%%"))());
    expect(e.toJSON()).toEqual({ code: 3, message: "ERROR_CODE_INVALID_SNAP_TOKEN", details: [] });
  });

  it("snap tokens older than the GC horizon -> ERROR_CODE_SNAP_TOKEN_EXPIRED (400)", async () => {
    const service = new PembaService(new MemoryStore());
    await service.writeSchema("t1", SCHEMA);
    const old = await service.writeData("t1", "", [t("1", "1")], []);
    await service.writeData("t1", "", [t("2", "1")], []);
    await service.store.gc(new Date(Date.now() + 60_000));
    const e = await errorOf(service.readRelationships("t1", old, {}, 10, ""));
    expect(e.toJSON()).toEqual({ code: 3, message: "ERROR_CODE_SNAP_TOKEN_EXPIRED", details: [] });
    expect(e.httpStatus).toBe(400);
  });

  it("deleteTenant of an unknown id -> ERROR_CODE_NOT_FOUND; t1 exists from the start", async () => {
    const service = new PembaService(new MemoryStore());
    expect((await service.listTenants(10, "")).items.map((x) => x.id)).toContain("t1");
    expect((await errorOf(service.deleteTenant("nope"))).message).toBe("ERROR_CODE_NOT_FOUND");
  });

  it("watch yields each later transaction once, in order", async () => {
    const service = new PembaService(new MemoryStore());
    await service.writeSchema("t1", SCHEMA);
    const from = await service.writeData("t1", "", [t("1", "1")], []);
    const s2 = await service.writeData("t1", "", [t("2", "2")], []);
    const s3 = await service.deleteRelationships("t1", { entity: { type: "document", ids: ["1"] } });
    const abort = new AbortController();
    const seen: { snapToken: string; ops: string[] }[] = [];
    for await (const batch of await service.watch("t1", from, { signal: abort.signal, pollMs: 5 })) {
      seen.push({ snapToken: batch.snapToken, ops: batch.changes.map((c) => c.operation) });
      if (seen.length === 2) abort.abort();
    }
    expect(seen).toEqual([
      { snapToken: s2, ops: ["OPERATION_CREATE"] },
      { snapToken: s3, ops: ["OPERATION_DELETE"] },
    ]);
  });

  it("an expired head schema is still served while one background read refreshes it", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      const store = new MemoryStore();
      const headSchema = store.headSchema.bind(store);
      let headReads = 0;
      store.headSchema = (tenantId: string) => {
        headReads++;
        return headSchema(tenantId);
      };
      const service = new PembaService(store, { headSchemaTtlMs: 1000 });
      const other = new PembaService(store);
      await service.writeSchema("t1", SCHEMA);
      await service.writeData("t1", "", [t("1", "1")], []);
      const query = { entity: t("1", "1").entity, permission: "view", subject: t("1", "1").subject };
      const can = (outcome: unknown) => {
        expect(outcome instanceof Promise).toBe(false); // answered without waiting for storage
        return (outcome as { can: string }).can;
      };
      expect(can(service.check("t1", meta, query))).toBe("CHECK_RESULT_ALLOWED");
      // another process writes a new head version under which the owner may no longer view
      await other.writeSchema(
        "t1",
        `entity user {}
entity document {
  relation owner @user
  attribute public boolean
  permission view = public
}`,
      );
      expect(headReads).toBe(0);
      vi.setSystemTime(Date.now() + 1500); // expired, within the grace period
      expect(can(service.check("t1", meta, query))).toBe("CHECK_RESULT_ALLOWED"); // old head, refresh started
      expect(can(service.check("t1", meta, query))).toBe("CHECK_RESULT_ALLOWED");
      await new Promise((resolve) => setTimeout(resolve, 0));
      expect(headReads).toBe(1);
      expect(can(service.check("t1", meta, query))).toBe("CHECK_RESULT_DENIED"); // new head: only public documents
      // idle for longer than the grace period: the head is loaded inline again
      vi.setSystemTime(Date.now() + 2500);
      const late = service.check("t1", meta, query);
      expect(late).toBeInstanceOf(Promise);
      expect((await late).can).toBe("CHECK_RESULT_DENIED");
      expect(headReads).toBe(2);
    } finally {
      vi.useRealTimers();
    }
  });
});
