/** createPemba: the replica each runtime asks for, settings named as the runtime spells them, gc and close. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createPemba, type PembaRuntime } from "./create-pemba.ts";
import type { PembaSettings } from "./settings/resolve.ts";
import { SqliteStore } from "./store/drivers/sqlite.ts";
import { MemoryStore } from "./store/memory/memory-store.ts";
import { ReplicaStore } from "./store/proxies/replica/index.ts";

const dir = mkdtempSync(join(tmpdir(), "pemba-create-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

const settings = (extra: Partial<PembaSettings> = {}): PembaSettings => ({
  database: "memory:",
  auth: { mode: "none" },
  gcWindowMs: 0,
  maxWatchStreams: 10,
  maxCompiledSchemaMb: 16,
  ...extra,
});

const runtime = (extra: Partial<PembaRuntime> = {}): PembaRuntime => ({
  name: "node",
  openStore: (database) =>
    database === "memory:" ? new MemoryStore() : SqliteStore.open(join(dir, `db-${n++}.sqlite`)),
  replica: "startup",
  ...extra,
});

describe("createPemba", () => {
  it("puts the replica the runtime asks for in front of a SQL store, none in front of memory", async () => {
    const replica = { maxBytes: 1048576, freshnessMs: 0 };
    for (const mode of ["startup", "lazy"] as const) {
      const sql = await createPemba(settings({ database: "sqlite", replica }), runtime({ replica: mode }));
      expect(sql.store).toBeInstanceOf(ReplicaStore);
      await sql.close();
    }
    const off = await createPemba(settings({ database: "sqlite" }), runtime());
    expect(off.store).toBeInstanceOf(SqliteStore);
    await off.close();
    const memory = await createPemba(settings({ replica }), runtime());
    expect(memory.store).toBeInstanceOf(MemoryStore);
    await memory.close();
  });

  it("names the CORS setting as the runtime spells it when an origin is refused", async () => {
    for (const [name, setting] of [
      ["node", "--cors-origins"],
      ["worker", "PEMBA_CORS_ORIGINS"],
    ] as const) {
      const pemba = await createPemba(settings(), runtime({ name }));
      const res = await pemba.fetch(
        new Request("http://pemba.test/v1/tenants/list", {
          method: "POST",
          headers: { origin: "https://evil.example" },
          body: "{}",
        }),
      );
      expect(res.status).toBe(403);
      expect(((await res.json()) as { message: string }).message).toContain(`(${setting})`);
      await pemba.close();
    }
  });

  it("runs requests and garbage collection in the runtime's scope; gc is a no-op with a 0 window", async () => {
    let scoped = 0;
    const scope = <T>(run: () => T): T => {
      scoped++;
      return run();
    };
    const pemba = await createPemba(settings({ gcWindowMs: 60_000 }), runtime({ scope }));
    expect((await pemba.fetch(new Request("http://pemba.test/healthz"))).status).toBe(200);
    expect(await pemba.gc()).toBe(0);
    expect(scoped).toBe(2);
    await pemba.close();
    const never = await createPemba(settings(), runtime({ scope }));
    expect(await never.gc()).toBe(0);
    expect(scoped).toBe(2);
    await never.close();
  });

  it("schemaWrites reaches the service: safe refuses a schema write that orphans rows, the default writes it", async () => {
    const OLD = "entity user {}\nentity doc { relation owner @user }";
    const post = (p: Awaited<ReturnType<typeof createPemba>>, path: string, body: unknown) =>
      p.fetch(
        new Request(`http://pemba.test/v1/tenants/t1${path}`, { method: "POST", body: JSON.stringify(body) }),
      );
    for (const [schemaWrites, status] of [
      ["safe", 400],
      [undefined, 200],
    ] as const) {
      const pemba = await createPemba(settings({ schemaWrites }), runtime());
      await post(pemba, "/schemas/write", { schema: OLD });
      const tuple = {
        entity: { type: "doc", id: "1" },
        relation: "owner",
        subject: { type: "user", id: "a" },
      };
      expect((await post(pemba, "/data/write", { metadata: {}, tuples: [tuple] })).status).toBe(200);
      const write = await post(pemba, "/schemas/write", { schema: "entity user {}\nentity doc {}" });
      expect(write.status).toBe(status);
      if (status === 400)
        expect(await write.json()).toMatchObject({
          message: expect.stringMatching(
            /^schema write would orphan live rows: relation doc#owner \(1 tuple\);/,
          ),
        });
      await pemba.close();
    }
  });
});
