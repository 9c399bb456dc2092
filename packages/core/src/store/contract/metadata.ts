/** Contract: tenants, schema versions and bundles. */
import { describe, expect, it } from "vitest";
import type { DataBundle } from "../store.ts";
import { tuple } from "../testing/fixtures.ts";
import type { StoreHandle } from "./handle.ts";

const bundle = (name: string): DataBundle => ({
  name,
  arguments: ["organizationID", "companyID"],
  operations: [
    {
      relationships_write: ["organization:{{.organizationID}}#admin@company:{{.companyID}}#admin"],
      relationships_delete: ["organization:{{.organizationID}}#member@user:x"],
      attributes_write: ["organization:{{.organizationID}}$public|boolean:true"],
      attributes_delete: [],
    },
  ],
});

export function describeMetadataContract(h: StoreHandle): void {
  describe("tenants", () => {
    it("t1 exists after open with name 'example tenant'", async () => {
      const t = await h.store.getTenant("t1");
      expect(t?.id).toBe("t1");
      expect(t?.name).toBe("example tenant");
      expect(t?.createdAt).toBeInstanceOf(Date);
    });

    it("create, get, duplicate create fails, unknown is undefined", async () => {
      const created = await h.store.createTenant("acme", "Acme Inc");
      expect(created.id).toBe("acme");
      expect(created.name).toBe("Acme Inc");
      expect((await h.store.getTenant("acme"))?.name).toBe("Acme Inc");
      await expect(h.store.createTenant("acme", "again")).rejects.toMatchObject({
        code: "ERROR_CODE_ALREADY_EXIST",
      });
      expect(await h.store.getTenant("nope")).toBeUndefined();
    });

    it("lists by id in pages with a cursor covering every tenant once", async () => {
      for (const id of ["c", "a", "b"]) await h.store.createTenant(id, `tenant ${id}`);
      const p1 = await h.store.listTenants(2);
      expect(p1.items.map((t) => t.id)).toEqual(["a", "b"]);
      expect(p1.cursor).not.toBe("");
      const p2 = await h.store.listTenants(2, p1.cursor);
      expect(p2.items.map((t) => t.id)).toEqual(["c", "t1"]);
      expect(p2.cursor).toBe("");
      await expect(h.store.listTenants(2, "!!not a cursor")).rejects.toMatchObject({
        code: "ERROR_CODE_INVALID_CONTINUOUS_TOKEN",
      });
    });

    it("paging works with non-ASCII tenant ids", async () => {
      for (const id of ["é1", "é2"]) await h.store.createTenant(id, id);
      const p1 = await h.store.listTenants(2);
      expect(p1.items.map((t) => t.id)).toEqual(["t1", "é1"]);
      const p2 = await h.store.listTenants(2, p1.cursor);
      expect(p2.items.map((t) => t.id)).toEqual(["é2"]);
      expect(p2.cursor).toBe("");
    });

    it("deleting a tenant returns it and removes all its data", async () => {
      const s = h.store;
      await s.createTenant("gone", "Gone");
      await s.writeSchema("gone", "v1", "entity user {}");
      await s.writeBundles("gone", [bundle("b1")]);
      const snap = await s.write("gone", {
        tuples: [tuple("doc:1#viewer@user:1")],
        attributes: [
          {
            entity: { type: "doc", id: "1" },
            attribute: "public",
            value: { type: "ATTRIBUTE_TYPE_BOOLEAN", data: true },
          },
        ],
      });
      expect((await s.deleteTenant("gone"))?.id).toBe("gone");
      expect(await s.deleteTenant("gone")).toBeUndefined();
      expect(await s.getTenant("gone")).toBeUndefined();
      await s.createTenant("gone", "Back");
      expect((await s.readTuples("gone", snap, {}, 100)).items).toEqual([]);
      expect((await s.readAttributes("gone", snap, {}, 100)).items).toEqual([]);
      expect(
        await s.queryTuples("gone", snap, [{ entityType: "doc", entityIds: ["1"], relations: ["viewer"] }]),
      ).toEqual([]);
      expect(await s.headSchema("gone")).toBeUndefined();
      expect(await s.readBundle("gone", "b1")).toBeUndefined();
      expect(await s.changes("gone", 0, 100)).toEqual([]);
      expect(await s.listObjectIds("gone", snap, "doc")).toEqual([]);
    });
  });

  describe("schemas", () => {
    it("write, read, head and list newest first with paging", async () => {
      const s = h.store;
      expect(await s.headSchema("t1")).toBeUndefined();
      await s.writeSchema("t1", "v1", "entity user {}");
      await s.writeSchema("t1", "v2", "entity user {}\nentity doc {}");
      await s.writeSchema("t1", "v3", "entity team {}");
      expect(await s.readSchema("t1", "v2")).toMatchObject({
        version: "v2",
        schema: "entity user {}\nentity doc {}",
      });
      expect((await s.readSchema("t1", "v2"))?.createdAt).toBeInstanceOf(Date);
      expect(await s.readSchema("t1", "v9")).toBeUndefined();
      expect((await s.headSchema("t1"))?.version).toBe("v3");
      const p1 = await s.listSchemas("t1", 2);
      expect(p1.items.map((r) => r.version)).toEqual(["v3", "v2"]);
      const p2 = await s.listSchemas("t1", 2, p1.cursor);
      expect(p2.items.map((r) => r.version)).toEqual(["v1"]);
      expect(p2.cursor).toBe("");
    });

    it("the head schema says at which snap it was read: every write up to it is older than the read", async () => {
      const s = h.store;
      await s.writeSchema("t1", "v1", "entity user {}");
      const written = await s.write("t1", { tuples: [tuple("doc:1#viewer@user:1")] });
      const head = await s.headSchema("t1");
      expect(head?.version).toBe("v1");
      expect(head?.readAt).toBeGreaterThanOrEqual(written);
      expect(head?.readAt).toBeLessThanOrEqual(await s.headSnap("t1"));
    });

    it("schemas are per tenant", async () => {
      await h.store.createTenant("other", "Other");
      await h.store.writeSchema("other", "v1", "entity user {}");
      expect(await h.store.headSchema("t1")).toBeUndefined();
      expect(await h.store.readSchema("t1", "v1")).toBeUndefined();
    });
  });

  describe("bundles", () => {
    it("write, read, replace and delete", async () => {
      const s = h.store;
      await s.writeBundles("t1", [bundle("a"), bundle("b")]);
      expect(await s.readBundle("t1", "a")).toEqual(bundle("a"));
      const replaced = { ...bundle("a"), arguments: ["x"] };
      await s.writeBundles("t1", [replaced]);
      expect(await s.readBundle("t1", "a")).toEqual(replaced);
      expect(await s.deleteBundle("t1", "a")).toBe(true);
      expect(await s.deleteBundle("t1", "a")).toBe(false);
      expect(await s.readBundle("t1", "a")).toBeUndefined();
      expect(await s.readBundle("t1", "b")).toEqual(bundle("b"));
      await s.createTenant("other", "Other");
      expect(await s.readBundle("other", "b")).toBeUndefined();
    });
  });
}
