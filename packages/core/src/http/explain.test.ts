import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compileSchema } from "../compile/index.ts";
import { parseSchema } from "../schema/index.ts";
import { PermissionExplainResponseSchema } from "../wire/permission.ts";
import type { ExplainResponse } from "./convert.ts";
import { verifyProof } from "./testing/explain-verify.ts";
import { startTestServer, TEST_SCHEMA, type TestServer, tuple } from "./testing/harness.ts";

const P = "/v1/tenants/t1/permissions";

describe("POST /v1/tenants/{tenant_id}/permissions/explain (Pemba extension)", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
    await s.call("/v1/tenants/t1/schemas/write", { schema: TEST_SCHEMA });
    await s.call("/v1/tenants/t1/data/write", {
      metadata: {},
      tuples: [
        tuple("document:1", "owner", "user:1"),
        tuple("document:1", "org", "organization:1"),
        tuple("organization:1", "admin", "user:2"),
        tuple("organization:1", "member", "user:4"),
        tuple("document:2", "viewer", "organization:1#member"),
      ],
      attributes: [
        { entity: { type: "document", id: "3" }, attribute: "is_public", value: { boolean: true } },
        { entity: { type: "document", id: "1" }, attribute: "score", value: { integer: 10 } },
      ],
    });
  });
  afterAll(() => s.close());

  const body = (entity: string, permission: string, subject: string, extra: Record<string, unknown> = {}) => {
    const [et, eid] = entity.split(":");
    const [st, sid] = subject.split(":");
    return {
      metadata: { depth: 20 },
      entity: { type: et, id: eid },
      permission,
      subject: { type: st, id: sid, relation: "" },
      ...extra,
    };
  };

  it("answers the check's decision with its proof, and every proof re-verifies against the store", async () => {
    const target = {
      schema: compileSchema(parseSchema(TEST_SCHEMA)),
      store: s.store,
      tenantId: "t1",
      snap: await s.store.headSnap("t1"),
      depth: 20,
    };
    let allowed = 0;
    for (const entity of ["document:1", "document:2", "document:3", "organization:1"])
      for (const permission of entity.startsWith("doc") ? ["edit", "view"] : ["view", "member"])
        for (const subject of ["user:1", "user:2", "user:4", "user:9"]) {
          const b = body(entity, permission, subject);
          const explained = await s.call(`${P}/explain`, b);
          const checked = await s.call(`${P}/check`, b);
          expect(explained.status).toBe(200);
          expect(explained.headers.get("content-type")).toBe("application/json");
          const out = PermissionExplainResponseSchema.parse(explained.body) as ExplainResponse;
          expect(out.can).toBe((checked.body as { can: string }).can);
          expect(await verifyProof(target, b, out)).toEqual([]);
          if (out.can === "CHECK_RESULT_ALLOWED") allowed++;
        }
    expect(allowed).toBe(12);
  });

  it("the granting path of a tuple-to-userset hop, as JSON", async () => {
    const r = await s.call(`${P}/explain`, body("document:1", "edit", "user:2"));
    expect(r.body).toEqual({
      can: "CHECK_RESULT_ALLOWED",
      metadata: { check_count: 3 },
      truncated: false,
      proof: {
        kind: "permission",
        entity: { type: "document", id: "1" },
        name: "edit",
        result: "ALLOWED",
        children: [
          {
            kind: "union",
            entity: { type: "document", id: "1" },
            name: "edit",
            result: "ALLOWED",
            children: [
              {
                kind: "tuple_to_userset",
                entity: { type: "document", id: "1" },
                name: "org.admin",
                result: "ALLOWED",
                children: [
                  {
                    kind: "relation",
                    entity: { type: "organization", id: "1" },
                    name: "admin",
                    result: "ALLOWED",
                    tuple: tuple("document:1", "org", "organization:1"),
                    contextual: false,
                    children: [
                      {
                        kind: "direct",
                        entity: { type: "organization", id: "1" },
                        name: "admin",
                        result: "ALLOWED",
                        tuple: tuple("organization:1", "admin", "user:2"),
                        contextual: false,
                        reason: "the tuple names the subject user:2",
                        children: [],
                      },
                    ],
                  },
                ],
              },
            ],
          },
        ],
      },
    });
  });

  it("contextual tuples and rule data apply as in check", async () => {
    const ctx = await s.call(
      `${P}/explain`,
      body("document:9", "view", "user:5", {
        context: { tuples: [tuple("document:9", "owner", "user:5")], attributes: [], data: {} },
      }),
    );
    const out = ctx.body as ExplainResponse;
    expect(out.can).toBe("CHECK_RESULT_ALLOWED");
    const leaf = out.proof.children[0].children[0].children[0].children[0].children[0].children[0];
    expect(leaf).toMatchObject({ kind: "direct", contextual: true });
    const ranked = await s.call(
      `${P}/explain`,
      body("document:1", "ranked", "user:1", { context: { tuples: [], attributes: [], data: { min: 50 } } }),
    );
    expect(ranked.body).toMatchObject({
      can: "CHECK_RESULT_DENIED",
      proof: {
        children: [
          {
            kind: "rule",
            result: "DENIED",
            rule: {
              name: "high_score",
              expression: "score >= context.data.min",
              arguments: { score: { "@type": "type.googleapis.com/base.v1.IntegerValue", data: 10 } },
            },
          },
        ],
      },
    });
  });

  it("bad bodies and unknown names get check's errors, word for word", async () => {
    for (const b of [
      body("document:1", "view", "user:1", { metadata: { depth: 2 } }),
      body("document:1", "", "user:1"),
      body("nothing:1", "view", "user:1"),
      body("document:1", "nothing", "user:1"),
      { entity: { type: "document", id: "1" } },
    ]) {
      const explained = await s.call(`${P}/explain`, b);
      const checked = await s.call(`${P}/check`, b);
      expect(explained.status).toBeGreaterThanOrEqual(400);
      expect({ status: explained.status, body: explained.body }).toEqual({
        status: checked.status,
        body: checked.body,
      });
    }
    const raw = await s.call(`${P}/explain`, undefined, { raw: "{not json" });
    const rawCheck = await s.call(`${P}/check`, undefined, { raw: "{not json" });
    expect(raw.status).toBe(rawCheck.status);
    expect(raw.body).toEqual(rawCheck.body);
  });

  it("needs the same key as check when keys are set", async () => {
    const auth = { mode: "preshared" as const, keys: [{ key: "k1", tenants: ["t1"] }] };
    const keyed = await startTestServer({ auth });
    try {
      const b = body("document:1", "view", "user:1");
      for (const [path, headers] of [
        [P, {}],
        [P, { authorization: "Bearer wrong" }],
        ["/v1/tenants/t2/permissions", { authorization: "Bearer k1" }],
      ] as const) {
        const explained = await keyed.call(`${path}/explain`, b, { headers });
        const checked = await keyed.call(`${path}/check`, b, { headers });
        expect(explained.status).toBeGreaterThanOrEqual(401);
        expect({ status: explained.status, body: explained.body }).toEqual({
          status: checked.status,
          body: checked.body,
        });
      }
    } finally {
      await keyed.close();
    }
  });
});
