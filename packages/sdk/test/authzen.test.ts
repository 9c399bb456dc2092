/** `client.authzen` against a real `pemba serve`: evaluation, batches, the three searches with paging, discovery. */

import { type ScratchServer, startScratchServe } from "@pemba/node-server/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, type PembaClient } from "../src/index.ts";

const SCHEMA = `entity user {}
entity document {
  relation reader @user
  relation editor @user
  permission read = reader or editor
  permission edit = editor
}`;

describe("SDK: client.authzen against pemba serve", () => {
  let server: ScratchServer;
  let client: PembaClient;
  const alice = { type: "user", id: "alice@example.com" };
  beforeAll(async () => {
    server = await startScratchServe();
    client = createClient({ baseUrl: server.url }).withTenant("az");
    await client.createTenant({ id: "az", name: "authzen" });
    await client.writeSchema(SCHEMA);
    // "/docs/a b" is stored under its reversible encoding: "b64." + unpadded base64url of the id
    await client.writeData({
      tuples: [
        { entity: { type: "document", id: "b64.L2RvY3MvYSBi" }, relation: "reader", subject: alice },
        { entity: { type: "document", id: "2" }, relation: "editor", subject: alice },
        { entity: { type: "document", id: "3" }, relation: "reader", subject: { type: "user", id: "bob" } },
      ],
    });
  });
  afterAll(async () => {
    await server?.close();
  });

  it("evaluate: a decision (an id Permify refuses is matched through its b64. encoding)", async () => {
    const q = (name: string, id: string) => ({
      subject: alice,
      action: { name },
      resource: { type: "document", id },
    });
    expect(await client.authzen.evaluate(q("read", "/docs/a b"))).toEqual({ decision: true });
    expect(await client.authzen.evaluate(q("edit", "/docs/a b"))).toEqual({ decision: false });
  });

  it("evaluations: defaults and a short circuit", async () => {
    const items = ["/docs/a b", "2", "3"].map((id) => ({ resource: { type: "document", id } }));
    expect(
      await client.authzen.evaluations({ subject: alice, action: { name: "read" }, evaluations: items }),
    ).toEqual([{ decision: true }, { decision: true }, { decision: false }]);
    expect(
      await client.authzen.evaluations({
        subject: alice,
        action: { name: "edit" },
        options: { evaluations_semantic: "deny_on_first_deny" },
        evaluations: items,
      }),
    ).toEqual([{ decision: false }]);
  });

  it("searches: resources page by page (ids decoded), subjects, actions", async () => {
    const req = { subject: alice, action: { name: "read" }, resource: { type: "document" } };
    const first = await client.authzen.searchResources({ ...req, page: { limit: 1 } });
    expect(first.results).toHaveLength(1);
    expect(first.page?.next_token).not.toBe("");
    const all = [];
    for await (const r of client.authzen.all((p) => client.authzen.searchResources({ ...req, ...p }), 1))
      all.push(r);
    expect(all.map((r) => r.id).sort()).toEqual(["/docs/a b", "2"]);
    const subjects = await client.authzen.searchSubjects({
      subject: { type: "user" },
      action: { name: "read" },
      resource: { type: "document", id: "3" },
    });
    expect(subjects.results).toEqual([{ type: "user", id: "bob" }]);
    const actions = await client.authzen.searchActions({
      subject: alice,
      resource: { type: "document", id: "2" },
    });
    expect(actions.results).toEqual([{ name: "edit" }, { name: "read" }]);
  });

  it("configuration: the tenant's decision point", async () => {
    const c = await client.authzen.configuration();
    expect(c.access_evaluation_endpoint).toBe(`${server.url}/v1/tenants/az/access/v1/evaluation`);
  });
});
