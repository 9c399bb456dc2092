/**
 * The Node server parses schema writes on its worker thread (one tenant's schema writes must not stall the
 * others): every full and partial schema write goes through core's SchemaParseWorker (whose own test shows the parse
 * does not run on the event loop's thread), with the answers and errors of the in-turn parse, over real HTTP.
 */
import { MAX_SCHEMA_BYTES, tryParseSchema } from "@pemba/core";
import { SchemaParseWorker } from "@pemba/core/node";
import { entitiesSchema } from "@pemba/core/testing";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type RunningServer, startServer } from "../src/index.ts";
import { post } from "./api-client.ts";

describe("schema writes on the Node server's parse thread", () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer({ database: "memory:", logger: pino({ level: "silent" }) });
  });
  afterAll(() => server.close());

  it("full and partial writes are parsed by the SchemaParseWorker, with the in-turn parse's answers", async () => {
    const parse = vi.spyOn(SchemaParseWorker.prototype, "parse");
    const partialWrite = vi.spyOn(SchemaParseWorker.prototype, "partialWrite");
    try {
      const text = entitiesSchema(3, MAX_SCHEMA_BYTES / 2);
      const written = await post(server.url, "/v1/tenants/t1/schemas/write", { schema: text });
      expect(written.status).toBe(200);
      expect(parse.mock.calls).toEqual([[text]]);

      const bad = "entity user {}\nentity doc {\n relation owner @user\n permission view = editor\n}\n";
      const refused = await post(server.url, "/v1/tenants/t1/schemas/write", { schema: bad });
      const expected = tryParseSchema(bad);
      expect(expected.ok).toBe(false);
      expect(refused).toEqual({
        status: 500,
        body: { code: 13, message: expected.ok ? "" : expected.error.message, details: [] },
      });
      expect(parse).toHaveBeenCalledTimes(2);

      const partial = await fetch(`${server.url}/v1/tenants/t1/schemas/partial-write`, {
        method: "PATCH",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          metadata: { schema_version: "" },
          partials: { user: { write: ["relation friend @user"], update: [], delete: [] } },
        }),
      });
      expect(partial.status).toBe(200);
      expect(partialWrite).toHaveBeenCalledTimes(1);
      const read = await post(server.url, "/v1/tenants/t1/schemas/read", {
        metadata: { schema_version: "" },
      });
      const schema = read.body.schema as { entity_definitions: Record<string, { relations: object }> };
      expect(Object.keys(schema.entity_definitions.user!.relations)).toEqual(["friend"]);
    } finally {
      parse.mockRestore();
      partialWrite.mockRestore();
    }
  });
});
