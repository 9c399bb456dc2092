/**
 * fetchRoutes: the table's non-streaming routes answered from a fetch Request straight through the app's pipeline
 * give what Hono gives for the same request; everything else is left to Hono.
 */
import { describe, expect, it } from "vitest";
import { PembaService } from "../service/index.ts";
import { MemoryStore } from "../store/memory/memory-store.ts";
import { createApp } from "./app.ts";
import { fetchRoutes, pathOf } from "./fetch-routes.ts";
import { TEST_SCHEMA, tuple } from "./testing/harness.ts";

const BASE = "http://pemba.test";
const checkBody = JSON.stringify({
  metadata: { depth: 20 },
  entity: { type: "document", id: "1" },
  permission: "view",
  subject: { type: "user", id: "1" },
});

function setup(maxBodyBytes = 20_000) {
  const seen: string[] = [];
  const app = createApp({
    service: new PembaService(new MemoryStore()),
    limits: { maxBodyBytes },
    cors: { origins: ["https://app.example"] },
    observe: (info) => seen.push(`${info.route} ${info.status}`),
  });
  return { app, routes: fetchRoutes(app), seen };
}

const post = (path: string, body: string, headers: Record<string, string> = {}) =>
  new Request(BASE + path, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "content-length": String(Buffer.byteLength(body)),
      ...headers,
    },
    body,
  });

async function parts(res: Response) {
  return { status: res.status, headers: [...res.headers], body: await res.text() };
}

describe("fetchRoutes", () => {
  it("answers the table's routes as Hono does: status, headers, body and the observed request", async () => {
    const { routes, seen } = setup();
    const requests = () => [
      post("/v1/tenants/t1/schemas/write", JSON.stringify({ schema: TEST_SCHEMA })),
      post(
        "/v1/tenants/t1/data/write",
        JSON.stringify({ metadata: {}, tuples: [tuple("document:1", "owner", "user:1")] }),
      ),
      post("/v1/tenants/t1/permissions/check", checkBody),
      post("/v1/tenants/t1/permissions/check?x=1", checkBody, { origin: "https://app.example" }),
      post("/v1/tenants/t1/permissions/check", checkBody, { origin: "https://evil.example" }),
      post("/v1/tenants/t1/permissions/check", "{not json"),
      post("/v1/tenants/t%31/permissions/check", checkBody),
      post("/v1/tenants/list", "{}"),
    ];
    const direct: unknown[] = [];
    for (const request of requests()) {
      const answer = routes(request);
      expect(answer).toBeDefined();
      direct.push(await parts(await answer!));
    }
    const viaDirect = seen.splice(0);
    // the same requests again through Hono: the writes answer again with the same bodies (same schema, same tuple)
    const { app: app2, seen: seen2 } = setup();
    const hono: unknown[] = [];
    for (const request of requests()) hono.push(await parts(await app2.fetch(request)));
    const strip = (all: unknown[]) =>
      (all as { status: number; headers: [string, string][]; body: string }[]).map((p) => ({
        ...p,
        // snap tokens, schema versions and the tenant's creation time are new per app
        body: p.body.replace(/"(snap_token|schema_version|created_at)":"[^"]*"/g, '"$1":""'),
      }));
    expect(strip(direct)).toEqual(strip(hono));
    expect(viaDirect).toEqual(seen2);
    expect(viaDirect).toContain("/v1/tenants/:tenant_id/permissions/check 403");
  });

  it("leaves to Hono streams, other paths, other methods and parameters that do not decode", () => {
    const { routes } = setup();
    for (const request of [
      post("/v1/tenants/t1/watch", "{}"),
      post("/v1/tenants/t1/permissions/lookup-entity-stream", "{}"),
      new Request(`${BASE}/healthz`),
      new Request(`${BASE}/v1/tenants/t1/permissions/check`),
      new Request(`${BASE}/v1/tenants/t1/permissions/check`, { method: "OPTIONS" }),
      post("/v1/tenants/t%ZZ/permissions/check", checkBody),
      post("/nothing/here", "{}"),
    ]) {
      expect(routes(request)).toBeUndefined();
    }
  });

  it("refuses a body over the limit, declared or streamed without a length, and reads one within it", async () => {
    const { routes } = setup(200);
    const big = JSON.stringify({ pad: "x".repeat(300) });
    const declared = await routes(post("/v1/tenants/list", big))!;
    expect(declared.status).toBe(413);
    expect(await declared.json()).toMatchObject({ code: 8 });
    const streamed = (text: string) =>
      new Request(`${BASE}/v1/tenants/list`, {
        method: "POST",
        body: new ReadableStream({
          start(c) {
            c.enqueue(new TextEncoder().encode(text));
            c.close();
          },
        }),
        duplex: "half",
      } as RequestInit);
    const over = await routes(streamed(big))!;
    expect(over.status).toBe(413);
    expect(await over.json()).toMatchObject({ code: 8 });
    const within = await routes(streamed("{}"))!;
    expect(within.status).toBe(200);
    const bom = await routes(post("/v1/tenants/list", "\uFEFF{}"))!;
    expect(bom.status).toBe(400);
  });

  it("pathOf gives a URL's pathname", () => {
    for (const url of [`${BASE}/a/b?c=d`, `${BASE}/`, "https://h:8080/x%20y/z", `${BASE}/p?q=/r`]) {
      expect(pathOf(url)).toBe(new URL(url).pathname);
    }
  });
});
