import { OpenAPIHono, z } from "@hono/zod-openapi";
import { describe, expect, it } from "vitest";
import { CorsPolicy } from "./cors.ts";
import { defaultPageSizes } from "./limits.ts";
import { type ApiRequest, jsonAnswer, RequestPipeline } from "./pipeline.ts";
import { FetchRoutes } from "./route.ts";
import { ROUTES } from "./route-table.ts";
import { pageSize } from "./routes/deps.ts";

const Body = z.object({ name: z.string().min(1) });

function setup(maxBodyBytes = 1000) {
  const app = new OpenAPIHono();
  const pipeline = new RequestPipeline({ auth: undefined, cors: new CorsPolicy(), observe: undefined });
  return { app, routes: new FetchRoutes(app, pipeline, maxBodyBytes) };
}

/** A request of `text` whose body reads are counted. */
function request(text: string, extra: Partial<ApiRequest> = {}) {
  const reads: number[] = [];
  const req: ApiRequest = {
    method: "POST",
    header: () => undefined,
    text: async (maxBytes) => {
      reads.push(maxBytes);
      return text;
    },
    param: (name) => (name === "tenant_id" ? "t1" : undefined),
    ...extra,
  };
  return { req, reads };
}

describe("FetchRoutes.add reads the body for the handler", () => {
  it("parses and validates `def.body` once, under the app's limit, before the handler runs", async () => {
    const { routes } = setup(1000);
    const seen: unknown[] = [];
    routes.add(
      { route: ROUTES.schemasRead, summary: "s", tag: "t", body: Body, response: z.object({}) },
      ({ body, tenantId }) => {
        seen.push([tenantId, body]);
        return jsonAnswer({});
      },
    );
    const ok = request('{"name":"a"}');
    expect((await routes.answer(ROUTES.schemasRead, ok.req))!.status).toBe(200);
    expect(seen).toEqual([["t1", { name: "a" }]]);
    expect(ok.reads).toEqual([1000]);

    const bad = request('{"name":""}');
    const answer = (await routes.answer(ROUTES.schemasRead, bad.req))!;
    expect(answer.status).toBe(400);
    expect(answer.error?.errorCode).toBe("ERROR_CODE_VALIDATION");
    expect(seen).toHaveLength(1); // the handler did not run
  });

  it("takes a route's own limit and reader; a body the transport decoded is not read again", async () => {
    const { routes } = setup(1000);
    const seen: unknown[] = [];
    routes.add(
      {
        route: ROUTES.check,
        summary: "s",
        tag: "t",
        body: Body,
        maxBodyBytes: 50,
        read: async (req, maxBytes) => ({ length: (await req.text(maxBytes)).length }),
        response: z.object({}),
      },
      ({ body }) => {
        seen.push(body);
        return jsonAnswer({});
      },
    );
    const own = request("12345");
    await routes.answer(ROUTES.check, own.req);
    expect(own.reads).toEqual([50]);
    const decoded = request("never read", { parsedBody: { length: 99 } });
    await routes.answer(ROUTES.check, decoded.req);
    expect(decoded.reads).toEqual([]);
    expect(seen).toEqual([{ length: 5 }, { length: 99 }]);
  });

  it("a route without a body schema reads nothing", async () => {
    const { routes } = setup();
    let body: unknown = "unset";
    routes.add({ route: ROUTES.tenantsDelete, summary: "s", tag: "t", response: z.object({}) }, (call) => {
      body = call.body;
      return jsonAnswer({});
    });
    const r = request("{}", { param: () => "x" });
    await routes.answer(ROUTES.tenantsDelete, r.req);
    expect(r.reads).toEqual([]);
    expect(body).toBeUndefined();
  });
});

describe("pageSize", () => {
  it("takes page_size 0 from the one table of defaults, capped by the limit", () => {
    expect(pageSize(0, "read", 1000)).toBe(defaultPageSizes.read);
    expect(pageSize(0, "lookup", 10000)).toBe(defaultPageSizes.lookup);
    expect(pageSize(0, "list", 1000)).toBe(defaultPageSizes.list);
    expect(pageSize(0, "lookup", 10)).toBe(10);
    expect(pageSize(7, "read", 1000)).toBe(7);
    expect(() => pageSize(1001, "read", 1000)).toThrow(
      expect.objectContaining({ code: "ERROR_CODE_PAGE_SIZE_EXCEEDED" }),
    );
  });
});
