/**
 * TEST SUPPORT ONLY: the AuthZEN Authorization API 1.0 suite, run against a running server over real HTTP (the Node
 * server and the Worker under `wrangler dev` run the same cases). It loads its fixtures through the HTTP API
 * (uploadValidationFile), then checks every example of the spec's text, the certification scenario's cases
 * (openid/authzen, certification/authorization-api-1_0-scenario.md), paging, properties and context that change
 * a decision, the interop scenarios' decisions, errors and headers. Every decision it sees is validated with the
 * spec's own JSON schema (spec-schemas/); search and batch answers with the shapes the spec's text gives.
 *
 * The server must run with preshared keys `KEY` (every tenant) and `OTHER_KEY` (tenant `other` only), and with
 * `authzenTenant` = `cert`.
 */
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { Ajv2020 } from "ajv/dist/2020.js";
import { beforeAll, describe, expect, it } from "vitest";
import { uploadValidationFile } from "../../validation/upload.ts";

export const AUTHZEN_KEY = "authzen-suite-key";
export const AUTHZEN_OTHER_KEY = "authzen-other-key";
/** The tenant the server must mount at the root paths. */
export const AUTHZEN_ROOT_TENANT = "cert";
/** `PEMBA_AUTH_KEYS` for the suite's server. */
export const AUTHZEN_AUTH_KEYS = `${AUTHZEN_KEY},${AUTHZEN_OTHER_KEY}:other`;

const REPO = resolve(import.meta.dirname, "../../../../..");
const example = (name: string) => readFileSync(join(REPO, "examples/authzen", name, "scenario.yaml"), "utf8");
const specSchema = (name: string) =>
  JSON.parse(readFileSync(join(import.meta.dirname, "spec-schemas", name), "utf8")) as object;

const ajv = new Ajv2020({ strict: false });
const validDecision = ajv.compile(specSchema("evaluation-response.schema.json"));
const validRequest = ajv.compile(specSchema("evaluation-request.schema.json"));
/** The batch answer (spec §Access Evaluations API Response): `evaluations`, each a Decision. */
const validEvaluations = ajv.compile({
  type: "object",
  required: ["evaluations"],
  properties: { evaluations: { type: "array", items: specSchema("evaluation-response.schema.json") } },
});
/** The search answer (spec §The Search API Response, §Paginated Responses). */
const searchSchema = (result: object) =>
  ajv.compile({
    type: "object",
    required: ["results"],
    properties: {
      page: {
        type: "object",
        required: ["next_token"],
        properties: {
          next_token: { type: "string" },
          count: { type: "integer", minimum: 0 },
          total: { type: "integer", minimum: 0 },
          properties: { type: "object" },
        },
      },
      context: { type: "object" },
      results: { type: "array", items: result },
    },
  });
const validEntitySearch = searchSchema({
  type: "object",
  required: ["type", "id"],
  properties: { type: { type: "string" }, id: { type: "string" } },
});
const validActionSearch = searchSchema({
  type: "object",
  required: ["name"],
  properties: { name: { type: "string" } },
});

export interface AuthzenServer {
  url: string;
}

interface Reply {
  status: number;
  headers: Headers;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: answers are checked against JSON schemas, then read
  body: any;
}

type Validator = ReturnType<typeof ajv.compile>;
const validatorOf: Record<string, Validator> = {
  evaluation: validDecision,
  evaluations: validEvaluations,
  "search/subject": validEntitySearch,
  "search/resource": validEntitySearch,
  "search/action": validActionSearch,
};

/** The spec's example tenant: accounts, documents, todos and a rule on `context.data`. */
const SPEC_FIXTURE = `
schema: |-
  entity user {}

  entity account {
    relation reader @user
    permission can_read = reader
  }

  entity document {
    relation reader @user
    relation editor @user
    permission read = reader
    permission can_read = reader or editor
    permission can_edit = editor
  }

  entity todo {
    relation reader @user
    permission can_read = reader
  }

  entity report {
    relation reader @user
    attribute opens integer
    permission can_read = reader and open_now(opens)
  }

  rule open_now(opens integer) {
    context.data.hour >= opens && context.data.hour < 17
  }

relationships:
  - account:123#reader@user:alice@example.com
  - account:456#reader@user:alice@example.com
  - account:789#reader@user:alice@example.com
  - account:123#reader@user:bob@example.com
  - document:1#reader@user:alice@example.com
  - document:3#reader@user:alice@example.com
  - document:boxcarring.md#reader@user:alice@example.com
  - document:resource-search.md#reader@user:alice@example.com
  - todo:1#reader@user:alice@example.com
  - report:q3#reader@user:alice@example.com

attributes:
  - report:q3$opens|integer:9
`;

/** A tenant with 25 documents alice reads and 23 users who read document `d0`, for paging. */
const PAGING_FIXTURE = `
schema: |-
  entity user {}
  entity document {
    relation reader @user
    permission read = reader
  }
relationships:
${Array.from({ length: 25 }, (_, i) => `  - document:d${i}#reader@user:alice`).join("\n")}
${Array.from({ length: 22 }, (_, i) => `  - document:d0#reader@user:u${i}`).join("\n")}
`;

const ALICE = { type: "user", id: "alice@example.com" };

/** The AuthZEN suite against the server `start` gives (its fixtures loaded once, in `beforeAll`). */
export function describeAuthzen(name: string, server: () => AuthzenServer): void {
  describe(`AuthZEN Authorization API 1.0: ${name}`, () => {
    let url = "";
    const call = async (
      path: string,
      body: unknown,
      init: { headers?: Record<string, string>; raw?: string; method?: string } = {},
    ): Promise<Reply> => {
      const res = await fetch(url + path, {
        method: init.method ?? "POST",
        headers: {
          authorization: `Bearer ${AUTHZEN_KEY}`,
          "content-type": "application/json",
          ...init.headers,
        },
        body: init.method === "GET" ? undefined : (init.raw ?? JSON.stringify(body)),
      });
      const text = await res.text();
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      return { status: res.status, headers: res.headers, text, body: parsed };
    };
    /** An AuthZEN call that must succeed: 200, application/json, valid for the endpoint's JSON schema. */
    const ok = async (tenant: string, endpoint: string, body: unknown, headers?: Record<string, string>) => {
      const prefix = tenant === "" ? "" : `/v1/tenants/${tenant}`;
      const r = await call(`${prefix}/access/v1/${endpoint}`, body, { headers });
      expect(r.status, r.text).toBe(200);
      expect(r.headers.get("content-type")).toMatch(/^application\/json/);
      const valid =
        endpoint === "evaluations" && r.body?.evaluations === undefined
          ? validDecision
          : validatorOf[endpoint]!;
      expect(valid(r.body), JSON.stringify(valid.errors)).toBe(true);
      return r;
    };
    const decide = async (tenant: string, body: unknown) =>
      (await ok(tenant, "evaluation", body)).body.decision as boolean;
    const decisions = async (tenant: string, body: unknown) =>
      ((await ok(tenant, "evaluations", body)).body.evaluations as { decision: boolean }[]).map(
        (d) => d.decision,
      );

    beforeAll(async () => {
      url = server().url;
      const target = (tenant: string) => ({ url, tenant, token: AUTHZEN_KEY });
      await uploadValidationFile(SPEC_FIXTURE, target("spec"));
      await uploadValidationFile(PAGING_FIXTURE, target("paging"));
      await uploadValidationFile(example("certification"), target("cert"));
      await uploadValidationFile(example("todo"), target("todo"));
      await uploadValidationFile(example("gateway"), target("gateway"));
      await uploadValidationFile(example("search"), target("search"));
    });

    describe("every example of the spec's text", () => {
      it("§Access Evaluation API Request: the example request is permitted", async () => {
        const body = {
          subject: ALICE,
          resource: { type: "account", id: "123" },
          action: { name: "can_read", properties: { method: "GET" } },
          context: { time: "1985-10-26T01:22-07:00" },
        };
        expect(validRequest(body)).toBe(true);
        expect((await ok("spec", "evaluation", body)).text).toBe('{"decision":true}');
      });

      it("§Information Model: subject, resource and action examples with properties are accepted", async () => {
        const subjects = [
          ALICE,
          { ...ALICE, properties: { department: "Sales" } },
          { ...ALICE, properties: { ip_address: "172.217.22.14", device_id: "8:65:ee:17:7e:0b" } },
        ];
        for (const subject of subjects) {
          expect(
            await decide("spec", {
              subject,
              action: { name: "can_read" },
              resource: { type: "account", id: "123" },
            }),
          ).toBe(true);
        }
        const book = {
          type: "book",
          id: "123",
          properties: { library_record: { title: "AuthZEN in Action", isbn: "978-0593383322" } },
        };
        // book is not a type of the schema: a closed decision that says so
        const r = await ok("spec", "evaluation", {
          subject: ALICE,
          action: { name: "extend-loan", properties: { period: "2W" } },
          resource: book,
        });
        expect(r.body).toEqual({
          decision: false,
          context: { error: { status: 404, message: 'resource type "book" is not in the schema' } },
        });
      });

      const boxcar = (id: string) => ({ type: "document", id });
      const time = { time: "2024-05-31T15:22-07:00" };

      it("§Access Evaluations API Request: three requests with no default values", async () => {
        const item = (id: string) => ({
          subject: ALICE,
          action: { name: "can_read" },
          resource: boxcar(id),
          context: time,
        });
        expect(
          await decisions("spec", {
            evaluations: [item("boxcarring.md"), item("subject-search.md"), item("resource-search.md")],
          }),
        ).toEqual([true, false, true]);
      });

      it("§Default values: a single subject and context", async () => {
        const item = (id: string) => ({ action: { name: "can_read" }, resource: boxcar(id) });
        expect(
          await decisions("spec", {
            subject: ALICE,
            context: time,
            evaluations: [item("boxcarring.md"), item("subject-search.md"), item("resource-search.md")],
          }),
        ).toEqual([true, false, true]);
      });

      it("§Default values: a default action the third request overrides (also the HTTPS binding's example)", async () => {
        const body = {
          subject: ALICE,
          context: time,
          action: { name: "can_read" },
          evaluations: [
            { resource: boxcar("boxcarring.md") },
            { resource: boxcar("subject-search.md") },
            { action: { name: "can_edit" }, resource: boxcar("resource-search.md") },
          ],
        };
        const r = await ok("spec", "evaluations", body, {
          "x-request-id": "bfe9eb29-ab87-4ca3-be83-a1d5d8305716",
        });
        expect(r.headers.get("x-request-id")).toBe("bfe9eb29-ab87-4ca3-be83-a1d5d8305716");
        expect(r.body).toEqual({
          evaluations: [{ decision: true }, { decision: false }, { decision: false }],
        });
      });

      it("§Evaluations options: an item without an action is a closed decision with its error", async () => {
        const r = await ok("spec", "evaluations", {
          evaluations: [{ resource: { type: "doc", id: "1" }, subject: { type: "doc", id: "2" } }],
          options: { evaluations_semantic: "execute_all", another_option: "value" },
        });
        expect(r.body).toEqual({
          evaluations: [
            { decision: false, context: { error: { status: 400, message: "action: required object" } } },
          ],
        });
      });

      const semantic = (evaluations_semantic: string) => ({
        subject: ALICE,
        action: { name: "read" },
        options: { evaluations_semantic },
        evaluations: ["1", "2", "3"].map((id) => ({ resource: { type: "document", id } })),
      });
      it("§Evaluations semantics: execute_all answers all three", async () => {
        expect(await decisions("spec", semantic("execute_all"))).toEqual([true, false, true]);
      });
      it("§Evaluations semantics: deny_on_first_deny stops at the second", async () => {
        expect(await decisions("spec", semantic("deny_on_first_deny"))).toEqual([true, false]);
      });
      it("§Evaluations semantics: permit_on_first_permit stops at the first", async () => {
        expect(await decisions("spec", semantic("permit_on_first_permit"))).toEqual([true]);
      });

      it("§Pagination: three accounts in pages of two, the second token ends the set", async () => {
        const req = { subject: ALICE, action: { name: "can_read" }, resource: { type: "account" } };
        const first = await ok("spec", "search/resource", { ...req, page: { limit: 2 } });
        expect(first.body.results).toEqual([
          { type: "account", id: "123" },
          { type: "account", id: "456" },
        ]);
        expect(first.body.page.count).toBe(2);
        expect(first.body.page.next_token).not.toBe("");
        const second = await ok("spec", "search/resource", {
          ...req,
          page: { limit: 2, token: first.body.page.next_token },
        });
        expect(second.body).toEqual({
          page: { next_token: "", count: 1 },
          results: [{ type: "account", id: "789" }],
        });
      });

      it("§Subject Search API: the users who can read account 123 (and the HTTPS binding's example)", async () => {
        const r = await ok(
          "spec",
          "search/subject",
          {
            subject: { type: "user" },
            action: { name: "can_read" },
            resource: { type: "account", id: "123" },
            context: { time: "2024-10-26T01:22-07:00" },
          },
          { "x-request-id": "bfe9eb29-ab87-4ca3-be83-a1d5d8305716" },
        );
        expect(r.headers.get("x-request-id")).toBe("bfe9eb29-ab87-4ca3-be83-a1d5d8305716");
        expect(r.body).toEqual({
          page: { next_token: "", count: 2 },
          results: [
            { type: "user", id: "alice@example.com" },
            { type: "user", id: "bob@example.com" },
          ],
        });
      });

      it("§Resource Search API: the accounts alice can read", async () => {
        const r = await ok("spec", "search/resource", {
          subject: ALICE,
          action: { name: "can_read" },
          resource: { type: "account" },
        });
        expect(r.body.results.map((e: { id: string }) => e.id)).toEqual(["123", "456", "789"]);
      });

      it("§Action Search API: what alice may do on account 123", async () => {
        const r = await ok("spec", "search/action", {
          subject: ALICE,
          resource: { type: "account", id: "123" },
          context: { time: "2024-10-26T01:22-07:00" },
        });
        expect(r.body).toEqual({ page: { next_token: "", count: 1 }, results: [{ name: "can_read" }] });
      });

      it("§HTTPS JSON Binding: the todo evaluation with its request id", async () => {
        const r = await ok(
          "spec",
          "evaluation",
          {
            subject: ALICE,
            resource: { type: "todo", id: "1" },
            action: { name: "can_read" },
            context: { time: "1985-10-26T01:22-07:00" },
          },
          { "x-request-id": "bfe9eb29-ab87-4ca3-be83-a1d5d8305716" },
        );
        expect(r.headers.get("x-request-id")).toBe("bfe9eb29-ab87-4ca3-be83-a1d5d8305716");
        expect(r.body).toEqual({ decision: true });
      });

      it("§Policy Decision Point Metadata: a tenant's document, at its path and at the RFC 8615 form", async () => {
        for (const path of [
          "/v1/tenants/spec/.well-known/authzen-configuration",
          "/.well-known/authzen-configuration/v1/tenants/spec",
        ]) {
          const r = await call(path, undefined, { method: "GET" });
          expect(r.status).toBe(200);
          expect(r.headers.get("content-type")).toMatch(/^application\/json/);
          const base = `${url}/v1/tenants/spec`;
          expect(r.body).toEqual({
            policy_decision_point: base,
            access_evaluation_endpoint: `${base}/access/v1/evaluation`,
            access_evaluations_endpoint: `${base}/access/v1/evaluations`,
            search_subject_endpoint: `${base}/access/v1/search/subject`,
            search_resource_endpoint: `${base}/access/v1/search/resource`,
            search_action_endpoint: `${base}/access/v1/search/action`,
          });
        }
      });
    });

    describe("properties and context change decisions", () => {
      it("context.data: the report is readable from 9 to 17 by the request's hour, closed without it", async () => {
        const q = (context?: object) => ({
          subject: ALICE,
          action: { name: "can_read" },
          resource: { type: "report", id: "q3" },
          context,
        });
        expect(await decide("spec", q({ hour: 10 }))).toBe(true);
        expect(await decide("spec", q({ hour: 20 }))).toBe(false);
        const missing = await ok("spec", "evaluation", q());
        expect(missing.body.decision).toBe(false);
        expect(missing.body.context.error.status).toBe(400);
      });

      it("resource properties: a contextual attribute typed by the schema replaces the stored one", async () => {
        const q = (opens?: unknown) => ({
          subject: ALICE,
          action: { name: "can_read" },
          resource: { type: "report", id: "q3", ...(opens === undefined ? {} : { properties: { opens } }) },
          context: { hour: 8 },
        });
        expect(await decide("spec", q())).toBe(false);
        expect(await decide("spec", q(7))).toBe(true);
        expect((await ok("spec", "evaluation", q("seven"))).body).toEqual({
          decision: false,
          context: {
            error: { status: 400, message: "resource.properties.opens: expected integer (attribute opens)" },
          },
        });
      });

      it("subject properties: alice with role admin may write the archived record (bob's stored role does)", async () => {
        const write = (subject: object) => ({
          subject,
          action: { name: "write" },
          resource: { type: "record", id: "record-2", properties: { status: "archived" } },
        });
        expect(await decide("cert", write({ type: "user", id: "alice" }))).toBe(false);
        expect(
          await decide("cert", write({ type: "user", id: "alice", properties: { role: "admin" } })),
        ).toBe(true);
        expect(
          await decide("cert", write({ type: "user", id: "bob", properties: { role: "auditor" } })),
        ).toBe(false);
      });

      it("resource properties: record-1 given as archived refuses alice's write", async () => {
        const write = (status: string) => ({
          subject: { type: "user", id: "alice" },
          action: { name: "write" },
          resource: { type: "record", id: "record-1", properties: { status } },
        });
        expect(await decide("cert", write("active"))).toBe(true);
        expect(await decide("cert", write("archived"))).toBe(false);
      });

      it("a batch evaluates each item's properties (items with different properties of one entity)", async () => {
        const body = {
          subject: { type: "user", id: "alice" },
          action: { name: "write" },
          evaluations: ["active", "archived", "active"].map((status) => ({
            resource: { type: "record", id: "record-1", properties: { status } },
          })),
        };
        expect(await decisions("cert", body)).toEqual([true, false, true]);
      });
    });

    describe("paging across all results", () => {
      it("resource search: 25 documents in pages of 7, each once, in the order the engine gives", async () => {
        const req = {
          subject: { type: "user", id: "alice" },
          action: { name: "read" },
          resource: { type: "document" },
        };
        const seen: string[] = [];
        const counts: number[] = [];
        let token: string | undefined;
        do {
          const r = await ok("paging", "search/resource", {
            ...req,
            page: { limit: 7, ...(token ? { token } : {}) },
          });
          seen.push(...r.body.results.map((e: { id: string }) => e.id));
          counts.push(r.body.page.count);
          token = r.body.page.next_token;
        } while (token);
        expect(counts).toEqual([7, 7, 7, 4]);
        expect([...seen].sort()).toEqual(Array.from({ length: 25 }, (_, i) => `d${i}`).sort());
      });

      it("subject search: 23 readers of d0 in pages of 10", async () => {
        const req = {
          subject: { type: "user" },
          action: { name: "read" },
          resource: { type: "document", id: "d0" },
        };
        const seen: string[] = [];
        let token: string | undefined;
        let pages = 0;
        do {
          const r = await ok("paging", "search/subject", {
            ...req,
            page: { limit: 10, ...(token ? { token } : {}) },
          });
          seen.push(...r.body.results.map((e: { id: string }) => e.id));
          token = r.body.page.next_token;
          pages++;
        } while (token);
        expect(pages).toBe(3);
        expect([...seen].sort()).toEqual(["alice", ...Array.from({ length: 22 }, (_, i) => `u${i}`)].sort());
      });

      it("action search: pages of one action", async () => {
        const req = { subject: { type: "user", id: "alice" }, resource: { type: "record", id: "record-1" } };
        const first = await ok("cert", "search/action", { ...req, page: { limit: 1 } });
        expect(first.body.results).toEqual([{ name: "read" }]);
        const second = await ok("cert", "search/action", {
          ...req,
          page: { limit: 1, token: first.body.page.next_token },
        });
        expect(second.body).toEqual({ page: { next_token: "", count: 1 }, results: [{ name: "write" }] });
      });

      it("a token sent with another request is refused (400)", async () => {
        const req = {
          subject: { type: "user", id: "alice" },
          action: { name: "read" },
          resource: { type: "document" },
        };
        const first = await ok("paging", "search/resource", { ...req, page: { limit: 7 } });
        const other = await call("/v1/tenants/paging/access/v1/search/resource", {
          ...req,
          action: { name: "reader", properties: { relation: true } },
          page: { limit: 7, token: first.body.page.next_token },
        });
        expect(other.status).toBe(400);
        const garbage = await call("/v1/tenants/paging/access/v1/search/resource", {
          ...req,
          page: { token: "garbage" },
        });
        expect(garbage.status).toBe(400);
      });
    });

    for (const [label, tenant] of [
      ["the tenant's path", "cert"],
      ["the root paths (--authzen-tenant cert)", ""],
    ] as const) {
      describe(`the certification scenario at ${label}`, () => {
        const alice = { type: "user", id: "alice" };
        const bob = { type: "user", id: "bob" };
        const record = (id: string, properties?: object) => ({
          type: "record",
          id,
          ...(properties ? { properties } : {}),
        });
        const prefix = tenant === "" ? "" : `/v1/tenants/${tenant}`;

        it("Basic: fixture decisions 1-8 (2.2.1-2.2.7), context, extra properties and unknown fields", async () => {
          const q = (subject: object, name: string, resource: object, actionProps?: object) => ({
            subject,
            action: { name, ...(actionProps ? { properties: actionProps } : {}) },
            resource,
          });
          expect(await decide(tenant, q(alice, "read", record("record-1")))).toBe(true);
          expect(await decide(tenant, q(alice, "write", record("record-1")))).toBe(true);
          expect(await decide(tenant, q(bob, "read", record("record-1")))).toBe(true);
          expect(await decide(tenant, q(bob, "write", record("record-1")))).toBe(false);
          expect(await decide(tenant, q(alice, "write", record("record-2", { status: "archived" })))).toBe(
            false,
          );
          expect(
            await decide(
              tenant,
              q(
                { ...bob, properties: { role: "admin" } },
                "write",
                record("record-2", { status: "archived" }),
              ),
            ),
          ).toBe(true);
          expect(await decide(tenant, q(alice, "delete", record("record-1"), { soft: true }))).toBe(true);
          expect(await decide(tenant, q(alice, "delete", record("record-1"), { soft: false }))).toBe(false);
          expect(
            await decide(tenant, {
              ...q(alice, "read", record("record-1")),
              context: { time: "2025-06-27T18:03-07:00", ip: "192.168.1.1" },
            }),
          ).toBe(true);
          expect(
            await decide(tenant, {
              subject: { ...alice, properties: { department: "Sales", role: "manager" } },
              action: { name: "read", properties: { method: "GET" } },
              resource: record("record-1", { status: "active", owner: "bob" }),
            }),
          ).toBe(true);
          expect(
            await decide(tenant, {
              ...q(alice, "read", record("record-1")),
              foo: "bar",
              futureField: { nested: true },
            }),
          ).toBe(true);
        });

        it("Basic: missing or invalid fields, wrong Content-Type, malformed JSON, empty body: 400", async () => {
          const path = `${prefix}/access/v1/evaluation`;
          const a = { name: "read" };
          const r1 = record("record-1");
          for (const body of [
            { action: a, resource: r1 },
            { subject: alice, resource: r1 },
            { subject: alice, action: a },
            { subject: { id: "alice" }, action: a, resource: r1 },
            { subject: { type: "user" }, action: a, resource: r1 },
            { subject: alice, action: {}, resource: r1 },
            { subject: alice, action: a, resource: { id: "record-1" } },
            { subject: alice, action: a, resource: { type: "record" } },
            { subject: "alice", action: a, resource: r1 },
            { subject: alice, action: { name: 123 }, resource: r1 },
          ]) {
            const r = await call(path, body);
            expect(r.status, JSON.stringify(body)).toBe(400);
          }
          const good = JSON.stringify({ subject: alice, action: a, resource: r1 });
          expect(
            (await call(path, undefined, { raw: good, headers: { "content-type": "text/plain" } })).status,
          ).toBe(400);
          expect((await call(path, undefined, { raw: good, headers: { "content-type": "" } })).status).toBe(
            400,
          );
          expect((await call(path, undefined, { raw: '{"subject": {' })).status).toBe(400);
          expect((await call(path, undefined, { raw: "" })).status).toBe(400);
          const charset = await call(path, undefined, {
            raw: good,
            headers: { "content-type": "application/json; charset=utf-8" },
          });
          expect(charset.status).toBe(200);
        });

        it("Basic: X-Request-ID is echoed (errors too), absent is fine; the same request answers the same", async () => {
          const body = { subject: alice, action: { name: "read" }, resource: record("record-1") };
          const r = await call(`${prefix}/access/v1/evaluation`, body, {
            headers: { "x-request-id": "req-42" },
          });
          expect(r.headers.get("x-request-id")).toBe("req-42");
          const bad = await call(
            `${prefix}/access/v1/evaluation`,
            {},
            { headers: { "x-request-id": "req-43" } },
          );
          expect(bad.status).toBe(400);
          expect(bad.headers.get("x-request-id")).toBe("req-43");
          const answers = [];
          for (let i = 0; i < 5; i++) answers.push((await ok(tenant, "evaluation", body)).text);
          expect(answers).toEqual(Array(5).fill('{"decision":true}'));
        });

        it("Batch: 3.2.1-3.2.7 (defaults, whole-object overrides, properties, context inheritance)", async () => {
          const two = await decisions(tenant, {
            subject: alice,
            action: { name: "read" },
            evaluations: [{ resource: record("record-1") }, { resource: record("record-2") }],
          });
          expect(two).toEqual([true, false]);
          expect(
            await decisions(tenant, {
              subject: bob,
              resource: record("record-1"),
              evaluations: [{ action: { name: "read" } }, { action: { name: "write" } }],
            }),
          ).toEqual([true, false]);
          expect(
            await decisions(tenant, {
              subject: alice,
              action: { name: "write" },
              evaluations: [
                { resource: record("record-1", { status: "active" }) },
                { resource: record("record-2", { status: "archived" }) },
              ],
            }),
          ).toEqual([true, false]);
          expect(
            await decisions(tenant, {
              action: { name: "write" },
              resource: record("record-2", { status: "archived" }),
              evaluations: [{ subject: alice }, { subject: { ...bob, properties: { role: "admin" } } }],
            }),
          ).toEqual([false, true]);
          expect(
            await decisions(tenant, {
              evaluations: [
                { subject: alice, action: { name: "read" }, resource: record("record-1") },
                { subject: bob, action: { name: "write" }, resource: record("record-1") },
              ],
            }),
          ).toEqual([true, false]);
          expect(
            await decisions(tenant, {
              subject: alice,
              action: { name: "read" },
              context: { time: "2025-06-27T18:03-07:00" },
              evaluations: [
                { resource: record("record-1") },
                {
                  resource: record("record-2"),
                  context: { time: "2025-06-27T19:00-07:00", source: "batch-override" },
                },
              ],
            }),
          ).toEqual([true, false]);
          expect(
            await decisions(tenant, {
              subject: alice,
              action: { name: "write" },
              resource: record("record-1", { status: "active" }),
              evaluations: [{}, { resource: record("record-2", { status: "archived" }) }],
            }),
          ).toEqual([true, false]);
        });

        it("Batch: 3.4 a broken item is false in its place; no or empty evaluations answer as one evaluation", async () => {
          const r = await ok(tenant, "evaluations", {
            subject: alice,
            action: { name: "read" },
            options: { evaluations_semantic: "execute_all" },
            evaluations: [{ resource: record("record-1") }, {}],
          });
          expect(r.body).toEqual({
            evaluations: [
              { decision: true },
              { decision: false, context: { error: { status: 400, message: "resource: required object" } } },
            ],
          });
          const single = { subject: alice, action: { name: "read" }, resource: record("record-1") };
          expect((await ok(tenant, "evaluations", single)).body).toEqual({ decision: true });
          expect((await ok(tenant, "evaluations", { ...single, evaluations: [] })).body).toEqual({
            decision: true,
          });
          expect((await call(`${prefix}/access/v1/evaluations`, { evaluations: [] })).status).toBe(400);
        });

        it("Batch: 100 items answer in request order, 101 are refused", async () => {
          const items = Array.from({ length: 100 }, (_, i) => ({
            subject: i % 3 === 0 ? bob : alice,
            action: { name: i % 2 === 0 ? "read" : "write" },
            resource: record(i % 5 === 0 ? "record-2" : "record-1"),
          }));
          const expected = items.map((it) => {
            // record-2 is archived: bob (an admin) may write it, nobody reads it
            if (it.resource.id === "record-2") return it.subject === bob && it.action.name === "write";
            return it.subject === alice || it.action.name === "read";
          });
          expect(await decisions(tenant, { evaluations: items })).toEqual(expected);
          const over = await call(`${prefix}/access/v1/evaluations`, { evaluations: [...items, items[0]] });
          expect(over.status).toBe(400);
        });

        it("Search: 4.2-4.4 subject, resource and action searches (ids sent for the searched entity are ignored)", async () => {
          const ids = (r: Reply) =>
            r.body.results.map((e: { id?: string; name?: string }) => e.id ?? e.name).sort();
          const subjects = {
            subject: { type: "user" },
            action: { name: "read" },
            resource: record("record-1"),
          };
          expect(ids(await ok(tenant, "search/subject", subjects))).toEqual(["alice", "bob"]);
          expect(
            ids(await ok(tenant, "search/subject", { ...subjects, context: { ip: "192.168.1.1" } })),
          ).toEqual(["alice", "bob"]);
          expect(ids(await ok(tenant, "search/subject", { ...subjects, subject: alice }))).toEqual([
            "alice",
            "bob",
          ]);
          expect(
            ids(
              await ok(tenant, "search/subject", {
                subject: { type: "user" },
                action: { name: "write" },
                resource: record("record-2", { status: "archived" }),
              }),
            ),
          ).toEqual(["bob"]);
          const resources = { subject: alice, action: { name: "read" }, resource: { type: "record" } };
          expect(ids(await ok(tenant, "search/resource", resources))).toEqual(["record-1"]);
          expect(
            ids(await ok(tenant, "search/resource", { ...resources, resource: record("record-2") })),
          ).toEqual(["record-1"]);
          expect(
            ids(
              await ok(tenant, "search/resource", {
                subject: { ...bob, properties: { role: "admin" } },
                action: { name: "write" },
                resource: { type: "record" },
              }),
            ),
          ).toEqual(["record-2"]);
          expect(
            ids(await ok(tenant, "search/action", { subject: alice, resource: record("record-1") })),
          ).toEqual(["read", "write"]);
          expect(
            ids(
              await ok(tenant, "search/action", {
                subject: { ...bob, properties: { role: "admin" } },
                resource: record("record-2", { status: "archived" }),
              }),
            ),
          ).toEqual(["write"]);
        });

        it("Search: 4.5-4.7 page limit and token, empty results for unknown ids and types, 400s", async () => {
          const subjects = {
            subject: { type: "user" },
            action: { name: "read" },
            resource: record("record-1"),
          };
          const first = await ok(tenant, "search/subject", { ...subjects, page: { limit: 1 } });
          expect(first.body.results).toHaveLength(1);
          const second = await ok(tenant, "search/subject", {
            ...subjects,
            page: { limit: 1, token: first.body.page.next_token },
          });
          expect(second.body.results).toHaveLength(1);
          expect(second.body.page.next_token).toBe("");
          expect(
            (
              await ok(tenant, "search/action", {
                subject: { type: "user", id: "nonexistent-user" },
                resource: record("record-1"),
              })
            ).body.results,
          ).toEqual([]);
          expect(
            (await ok(tenant, "search/subject", { ...subjects, subject: { type: "spaceship" } })).body
              .results,
          ).toEqual([]);
          expect(
            (
              await ok(tenant, "search/resource", {
                subject: alice,
                action: { name: "read" },
                resource: { type: "spaceship" },
              })
            ).body.results,
          ).toEqual([]);
          expect(
            (await ok(tenant, "search/action", { subject: alice, resource: { type: "spaceship", id: "x" } }))
              .body.results,
          ).toEqual([]);
          for (const [endpoint, body] of [
            ["search/subject", { subject: { type: "user" }, resource: record("record-1") }],
            ["search/resource", { action: { name: "read" }, resource: { type: "record" } }],
            ["search/action", { subject: alice }],
            [
              "search/subject",
              { subject: { type: "user" }, action: { name: "read" }, resource: { type: "record" } },
            ],
            [
              "search/resource",
              { subject: { type: "user" }, action: { name: "read" }, resource: { type: "record" } },
            ],
            ["search/action", { subject: { type: "user" }, resource: record("record-1") }],
          ] as const) {
            expect(
              (await call(`${prefix}/access/v1/${endpoint}`, body)).status,
              `${endpoint} ${JSON.stringify(body)}`,
            ).toBe(400);
          }
        });

        it("Discovery: the decision point's metadata names its own endpoints", async () => {
          const path =
            tenant === ""
              ? "/.well-known/authzen-configuration"
              : "/v1/tenants/cert/.well-known/authzen-configuration";
          const r = await call(path, undefined, { method: "GET" });
          expect(r.status).toBe(200);
          const base = `${url}${prefix}`;
          expect(r.body.policy_decision_point).toBe(base);
          expect(r.body.access_evaluation_endpoint).toBe(`${base}/access/v1/evaluation`);
          expect(r.body.search_action_endpoint).toBe(`${base}/access/v1/search/action`);
        });
      });
    }

    describe("authentication: the API's own (401 without a key, 403 for a key of another tenant)", () => {
      const body = {
        subject: { type: "user", id: "alice" },
        action: { name: "read" },
        resource: { type: "record", id: "record-1" },
      };
      it("no key: 401 on every endpoint, X-Request-ID echoed", async () => {
        for (const endpoint of [
          "evaluation",
          "evaluations",
          "search/subject",
          "search/resource",
          "search/action",
        ]) {
          const r = await call(`/v1/tenants/cert/access/v1/${endpoint}`, body, {
            headers: { authorization: "", "x-request-id": "no-key" },
          });
          expect(r.status).toBe(401);
          expect(r.headers.get("x-request-id")).toBe("no-key");
        }
        expect(
          (await call("/access/v1/evaluation", body, { headers: { authorization: "Bearer wrong" } })).status,
        ).toBe(401);
      });
      it("a key for tenant `other` only: 403 for tenant cert and at the root (cert's)", async () => {
        const headers = { authorization: `Bearer ${AUTHZEN_OTHER_KEY}` };
        expect((await call("/v1/tenants/cert/access/v1/evaluation", body, { headers })).status).toBe(403);
        expect((await call("/access/v1/evaluation", body, { headers })).status).toBe(403);
      });
    });

    describe("the interop scenarios (examples/authzen)", () => {
      const PIDS = {
        rick: "CiRmZDA2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs",
        morty: "CiRmZDE2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs",
        summer: "CiRmZDI2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs",
        beth: "CiRmZDM2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs",
        jerry: "CiRmZDQ2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs",
      } as const;
      const EMAILS = {
        rick: "rick@the-citadel.com",
        morty: "morty@the-citadel.com",
        summer: "summer@the-smiths.com",
        beth: "beth@the-smiths.com",
        jerry: "jerry@the-smiths.com",
      } as const;
      type Who = keyof typeof PIDS;
      /** The interop's todos, by owner. */
      const TODOS: Record<Who, string> = {
        morty: "7240d0db-8ff0-41ec-98b2-34a096273b91",
        rick: "7240d0db-8ff0-41ec-98b2-34a096273b92",
        summer: "7240d0db-8ff0-41ec-98b2-34a096273b93",
        beth: "7240d0db-8ff0-41ec-98b2-34a096273b94",
        jerry: "7240d0db-8ff0-41ec-98b2-34a096273b95",
      };
      const WHO = Object.keys(PIDS) as Who[];
      const writers: Who[] = ["rick", "morty", "summer"];

      it("todo: roles and ownership (the owner is resource.properties.ownerID, an email)", async () => {
        for (const who of WHO) {
          const subject = { type: "user", id: PIDS[who] };
          const todo = (owner: Who) => ({
            type: "todo",
            id: TODOS[owner],
            properties: { ownerID: EMAILS[owner] },
          });
          const got = await decisions("todo", {
            subject,
            evaluations: [
              { action: { name: "can_read_user" }, resource: { type: "user", id: EMAILS.beth } },
              { action: { name: "can_read_todos" }, resource: { type: "todo", id: "todo-1" } },
              { action: { name: "can_create_todo" }, resource: { type: "todo", id: "todo-1" } },
              { action: { name: "can_update_todo" }, resource: todo("rick") },
              { action: { name: "can_update_todo" }, resource: todo(who) },
              { action: { name: "can_delete_todo" }, resource: todo("morty") },
              { action: { name: "can_delete_todo" }, resource: todo(who) },
            ],
          });
          const writer = writers.includes(who);
          expect(got, who).toEqual([
            true,
            true,
            writer,
            who === "rick",
            writer,
            who === "rick" || who === "morty",
            writer,
          ]);
        }
      });

      it("gateway: routes x methods, route ids encoded (b64.) and decoded back in searches", async () => {
        for (const who of WHO) {
          const q = (name: string, route: string) => ({
            subject: { type: "identity", id: PIDS[who] },
            action: { name },
            resource: { type: "route", id: route },
          });
          const writer = writers.includes(who);
          expect(
            await decisions("gateway", {
              evaluations: [
                q("GET", "/users/{userId}"),
                q("GET", "/todos"),
                q("POST", "/todos"),
                q("PUT", "/todos/{todoId}"),
                q("DELETE", "/todos/{todoId}"),
                q("PATCH", "/todos/{todoId}"),
              ],
            }),
            who,
          ).toEqual([true, true, writer, writer, writer, false]);
        }
        const routes = await ok("gateway", "search/resource", {
          subject: { type: "identity", id: PIDS.beth },
          action: { name: "GET" },
          resource: { type: "route" },
        });
        expect(routes.body.results.map((e: { id: string }) => e.id).sort()).toEqual([
          "/todos",
          "/users/{userId}",
        ]);
        const methods = await ok("gateway", "search/action", {
          subject: { type: "identity", id: PIDS.morty },
          resource: { type: "route", id: "/todos/{todoId}" },
        });
        expect(methods.body.results).toEqual([{ name: "DELETE" }, { name: "PUT" }]);
      });

      it("search: records by owner, department and manager; who may view or delete a record; actions", async () => {
        const ids = (r: Reply) => r.body.results.map((e: { id: string }) => e.id).sort();
        const records = (user: string, name: string) =>
          ok("search", "search/resource", {
            subject: { type: "user", id: user },
            action: { name },
            resource: { type: "record" },
          });
        const all = Array.from({ length: 20 }, (_, i) => String(101 + i));
        expect(ids(await records("alice", "view"))).toEqual(all);
        expect(ids(await records("bob", "view"))).toEqual([
          "101",
          "102",
          "103",
          "105",
          "108",
          "112",
          "114",
          "116",
          "117",
          "119",
          "120",
        ]);
        expect(ids(await records("felix", "view"))).toEqual([
          "104",
          "106",
          "109",
          "111",
          "112",
          "114",
          "118",
          "120",
        ]);
        expect(ids(await records("dan", "edit"))).toEqual(["104", "110", "115", "116"]);
        const who = (name: string, id: string) =>
          ok("search", "search/subject", {
            subject: { type: "user" },
            action: { name },
            resource: { type: "record", id },
          });
        expect(ids(await who("view", "115"))).toEqual(["alice", "carol", "dan", "erin"]);
        expect(ids(await who("delete", "103"))).toEqual(["carol"]);
        const actions = await ok("search", "search/action", {
          subject: { type: "user", id: "erin" },
          resource: { type: "record", id: "105" },
        });
        expect(actions.body.results).toEqual([{ name: "delete" }, { name: "edit" }, { name: "view" }]);
      });
    });
  });
}
