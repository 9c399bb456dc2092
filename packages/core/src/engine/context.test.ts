import { describe, expect, it } from "vitest";
import { parseAttributeString, parseTupleString } from "../schema/index.ts";
import { fixture } from "./testing.ts";

const SCHEMA = `
entity user {}
entity account {
  relation owner @user
  attribute balance integer
  attribute public boolean
  attribute tags string[]
  permission withdraw = owner and check_balance(balance)
  permission view = owner or public
  permission tagged = is_vip(tags)
}
rule check_balance(balance integer) {
  balance >= context.data.amount
}
rule is_vip(tags string[]) {
  'vip' in tags
}`;

describe("context", () => {
  it("contextual tuples are added to reads of the queried relation", async () => {
    const f = await fixture(SCHEMA, ["account:1#owner@user:1"]);
    const context = { tuples: [parseTupleString("account:1#owner@user:2")] };
    expect(await f.can("account:1", "view", "user:2")).toBe(false);
    expect(await f.can("account:1", "view", "user:2", { context })).toBe(true);
    expect(await f.can("account:1", "view", "user:1", { context })).toBe(true);
  });

  it("boolean attribute leaves: contextual first, then stored; missing is DENIED", async () => {
    const f = await fixture(SCHEMA, [], ["account:1$public|boolean:true", "account:2$public|boolean:false"]);
    expect(await f.can("account:1", "view", "user:9")).toBe(true);
    expect(await f.can("account:2", "view", "user:9")).toBe(false);
    expect(await f.can("account:3", "view", "user:9")).toBe(false);
    const context = { attributes: [parseAttributeString("account:1$public|boolean:false")] };
    expect(await f.can("account:1", "view", "user:9", { context })).toBe(false);
    const ctxTrue = { attributes: [parseAttributeString("account:3$public|boolean:true")] };
    expect(await f.can("account:3", "view", "user:9", { context: ctxTrue })).toBe(true);
  });

  it("duplicate contextual attributes of one entity attribute: the first is used (Permify)", async () => {
    const f = await fixture(SCHEMA, ["account:2#owner@user:1"]);
    const publicFirst = {
      attributes: [
        parseAttributeString("account:1$public|boolean:true"),
        parseAttributeString("account:1$public|boolean:false"),
      ],
    };
    expect(await f.can("account:1", "view", "user:9", { context: publicFirst })).toBe(true);
    const privateFirst = { attributes: [...publicFirst.attributes].reverse() };
    expect(await f.can("account:1", "view", "user:9", { context: privateFirst })).toBe(false);
    const balances = {
      data: { amount: 50 },
      attributes: [
        parseAttributeString("account:2$balance|integer:10"),
        parseAttributeString("account:2$balance|integer:100"),
      ],
    };
    expect(await f.can("account:2", "withdraw", "user:1", { context: balances })).toBe(false);
    const reversed = { ...balances, attributes: [...balances.attributes].reverse() };
    expect(await f.can("account:2", "withdraw", "user:1", { context: reversed })).toBe(true);
  });

  it("rule arguments: stored first, then contextual, then the zero value; data is context.data", async () => {
    const f = await fixture(
      SCHEMA,
      ["account:1#owner@user:1", "account:2#owner@user:1"],
      ["account:1$balance|integer:4000"],
    );
    expect(await f.can("account:1", "withdraw", "user:1", { context: { data: { amount: 3000.5 } } })).toBe(
      true,
    );
    expect(await f.can("account:1", "withdraw", "user:1", { context: { data: { amount: 5000 } } })).toBe(
      false,
    );
    // a contextual balance does not override the stored one
    const override = {
      data: { amount: 5000 },
      attributes: [parseAttributeString("account:1$balance|integer:9000")],
    };
    expect(await f.can("account:1", "withdraw", "user:1", { context: override })).toBe(false);
    // missing balance → 0
    expect(await f.can("account:2", "withdraw", "user:1", { context: { data: { amount: 0 } } })).toBe(true);
    expect(await f.can("account:2", "withdraw", "user:1", { context: { data: { amount: 1 } } })).toBe(false);
    // contextual balance used when none is stored
    const ctx = { data: { amount: 10 }, attributes: [parseAttributeString("account:2$balance|integer:10")] };
    expect(await f.can("account:2", "withdraw", "user:1", { context: ctx })).toBe(true);
    // missing array → []
    expect(await f.can("account:2", "tagged", "user:1")).toBe(false);
  });

  it("a missing context.data key is an error, not DENIED", async () => {
    const f = await fixture(SCHEMA, ["account:1#owner@user:1"], ["account:1$balance|integer:4000"]);
    await expect(f.can("account:1", "withdraw", "user:1")).rejects.toMatchObject({
      code: "ERROR_CODE_EXECUTION",
      grpcCode: 13,
      message: "failed to evaluate expression: no such key: amount",
    });
  });

  it("a rule checked by name runs without arguments (Permify): reading a parameter is an error", async () => {
    const f = await fixture(
      `${SCHEMA}
rule large(balance integer) {
  context.data.amount > 100
}`,
      [],
      ["account:1$tags|string[]:vip,gold", "account:1$balance|integer:4000"],
    );
    const noSuchAttribute = (name: string) => ({
      code: "ERROR_CODE_EXECUTION",
      grpcCode: 13,
      message: `failed to evaluate expression: no such attribute(s): ${name}`,
    });
    await expect(f.can("account:1", "is_vip", "user:1")).rejects.toMatchObject(noSuchAttribute("tags"));
    await expect(f.can("account:2", "is_vip", "user:1")).rejects.toMatchObject(noSuchAttribute("tags"));
    await expect(
      f.can("account:1", "check_balance", "user:1", { context: { data: { amount: 1 } } }),
    ).rejects.toMatchObject(noSuchAttribute("balance"));
    // a body that reads only context.data is evaluated, as in Permify
    expect(await f.can("account:1", "large", "user:1", { context: { data: { amount: 500 } } })).toBe(true);
    expect(await f.can("account:1", "large", "user:1", { context: { data: { amount: 5 } } })).toBe(false);
  });

  it("many contextual tuples on one read are de-duplicated in linear time", async () => {
    // 40,000 tuples on account:1#owner (each twice): a pairwise de-duplication makes 8e8 comparisons (minutes);
    // a linear one takes milliseconds (the test's timeout is the bound; figures belong to benchmarks).
    const f = await fixture(SCHEMA);
    const tuples = [];
    for (let i = 0; i < 20000; i++) {
      const t = parseTupleString(`account:1#owner@user:${i}`);
      tuples.push(t, { ...t });
    }
    expect(await f.can("account:1", "view", "user:19999", { context: { tuples } })).toBe(true);
    expect(await f.can("account:1", "view", "user:20000", { context: { tuples } })).toBe(false);
  });
});
