/**
 * Per-request state stays in each request's evaluation: checks that interleave over one compiled schema and one
 * pool (reads resolving on later ticks, different contextual data) answer exactly as each does alone.
 */
import { describe, expect, it } from "vitest";
import type { Context } from "../model.ts";
import { parseAttributeString, parseTupleString } from "../schema/index.ts";
import type { Store } from "../store/store.ts";
import { check } from "./check.ts";
import { EvaluationPool } from "./evaluation/pool.ts";
import { type Fixture, fixture } from "./testing.ts";
import type { CheckOutcome, CheckQuery } from "./types.ts";

const SCHEMA = `
entity user {}
entity team {
  relation member @user
}
entity account {
  relation owner @user @team#member
  attribute balance integer
  attribute public boolean
  permission withdraw = owner and check_balance(balance)
  permission view = owner or public
}
rule check_balance(balance integer) {
  balance >= context.data.amount
}`;
const TUPLES = ["account:1#owner@team:a#member", "team:a#member@user:1", "account:2#owner@user:2"];
const ATTRIBUTES = [
  "account:1$balance|integer:100",
  "account:2$balance|integer:10",
  "account:2$public|boolean:false",
];

type Case = [
  entity: string,
  permission: string,
  subject: string,
  context: Partial<Context> | undefined,
  can: boolean,
];
const CASES: Case[] = [
  ["account:1", "withdraw", "user:1", { data: { amount: 50 } }, true],
  ["account:1", "withdraw", "user:1", { data: { amount: 500 } }, false],
  ["account:2", "view", "user:3", { tuples: [parseTupleString("account:2#owner@user:3")] }, true],
  ["account:2", "view", "user:3", undefined, false],
  [
    "account:2",
    "view",
    "user:9",
    { attributes: [parseAttributeString("account:2$public|boolean:true")] },
    true,
  ],
  [
    "account:1",
    "withdraw",
    "user:7",
    { tuples: [parseTupleString("team:a#member@user:7")], data: { amount: 100 } },
    true,
  ],
  ["account:1", "withdraw", "user:7", { data: { amount: 1 } }, false],
];

const query = ([entity, permission, subject]: Case): CheckQuery => {
  const [type, id] = entity.split(":") as [string, string];
  const [stype, sid] = subject.split(":") as [string, string];
  return { entity: { type, id }, permission, subject: { type: stype, id: sid, relation: "" } };
};

/** The store's engine reads resolve on a later macrotask, reading their queries only then; `meanwhile` runs first. */
function laterTickStore(inner: Store, meanwhile: () => void = () => {}, synchronousEvery = 0): Store {
  let calls = 0;
  return new Proxy(inner, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== "function") return value;
      if (prop === "queryTuples" || prop === "queryAttributes" || prop === "querySubjectTuples")
        return (...args: unknown[]) => {
          // every `synchronousEvery`-th read answers at once (like a replica that has the rows)
          if (synchronousEvery > 0 && ++calls % synchronousEvery === 0) return value.apply(target, args);
          return new Promise((resolve, reject) =>
            setImmediate(() => {
              meanwhile();
              try {
                resolve(value.apply(target, args));
              } catch (e) {
                reject(e);
              }
            }),
          );
        };
      return value.bind(target);
    },
  });
}

async function alone(f: Fixture, store: Store, c: Case): Promise<CheckOutcome> {
  const target = { ...f.target({ store, context: c[3] }), evaluations: new EvaluationPool() };
  return await check(f.compiled, target, query(c));
}

describe("per-request state", () => {
  it("interleaved checks with different contextual data over reads on later ticks answer as each alone", async () => {
    const f = await fixture(SCHEMA, TUPLES, ATTRIBUTES);
    const store = laterTickStore(f.store);
    const expected: CheckOutcome[] = [];
    for (const c of CASES) expected.push(await alone(f, store, c));
    expect(expected.map((o) => o.can === "CHECK_RESULT_ALLOWED")).toEqual(CASES.map((c) => c[4]));
    // all at once, twice over, on one compiled schema and one pool
    const all = [...CASES, ...CASES].map((c) =>
      check(f.compiled, f.target({ store, context: c[3] }), query(c)),
    );
    // (a contextual attribute that grants answers without a read: synchronously)
    expect(all.filter((p) => p instanceof Promise)).toHaveLength(2 * (CASES.length - 1));
    expect(await Promise.all(all)).toEqual([...expected, ...expected]);
  });

  it("interleaved checks over a store answering some reads at once, some later (direct reads, then batches)", async () => {
    const f = await fixture(SCHEMA, TUPLES, ATTRIBUTES);
    const store = laterTickStore(f.store, undefined, 2);
    // as if it had answered a batch synchronously: evaluations start with direct reads
    f.evaluations.learnSynchronous(store);
    const expected = CASES.map((c) => c[4]);
    for (let round = 0; round < 3; round++) {
      const all = CASES.map((c) => check(f.compiled, f.target({ store, context: c[3] }), query(c)));
      const outcomes = await Promise.all(all);
      expect(outcomes.map((o) => o.can === "CHECK_RESULT_ALLOWED")).toEqual(expected);
    }
  });

  it("a check run while another awaits its reads gets an evaluation of its own", async () => {
    const f = await fixture(SCHEMA, TUPLES, ATTRIBUTES);
    const [outerCase, innerCase] = [CASES[0], CASES[1]];
    const innerAlone = check(
      f.compiled,
      f.target({ context: innerCase[3] }),
      query(innerCase),
    ) as CheckOutcome;
    const outerAlone = await alone(f, laterTickStore(f.store), outerCase);
    // the synchronous check above left its evaluation in the pool: the outer check takes it
    const inner: CheckOutcome[] = [];
    const store = laterTickStore(f.store, () => {
      // inside the outer check's await: a synchronous check on the same pool, another subject's question
      const out = check(f.compiled, f.target({ context: innerCase[3] }), query(innerCase));
      expect(out).not.toBeInstanceOf(Promise);
      inner.push(out as CheckOutcome);
    });
    const outer = await check(f.compiled, f.target({ store, context: outerCase[3] }), query(outerCase));
    expect(outer).toEqual(outerAlone);
    expect(inner.length).toBeGreaterThan(0);
    for (const o of inner) expect(o).toEqual(innerAlone);
  });

  it("the pool hands an evaluation to one question at a time", async () => {
    const f = await fixture(SCHEMA, TUPLES, ATTRIBUTES);
    const pool = new EvaluationPool();
    const target = f.target();
    const subject = { type: "user", id: "1", relation: "" };
    const first = pool.take(f.compiled, target, subject);
    const second = pool.take(f.compiled, target, subject);
    expect(second).not.toBe(first);
    pool.give(first);
    expect(pool.take(f.compiled, target, subject)).toBe(first);
    expect(pool.take(f.compiled, target, subject)).not.toBe(first);
  });
});
