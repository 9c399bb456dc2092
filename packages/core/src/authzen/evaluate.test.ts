/**
 * The evaluations semantics against a store that records its reads: execute_all reads as a bulk check of the same
 * questions does (one batched read per level), deny_on_first_deny and permit_on_first_permit never read for the
 * questions after the one that stops them.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { PembaService } from "../service/index.ts";
import { MemoryStore } from "../store/memory/memory-store.ts";
import type { Store } from "../store/store.ts";
import type { TupleQuery } from "../store/types.ts";
import { evaluate, evaluateMany } from "./evaluate.ts";
import type { AccessEvaluationsRequest } from "./wire.ts";

const SCHEMA = `entity user {}
entity document {
  relation reader @user
  permission read = reader
}`;

/** A store whose tuple reads answer asynchronously (as a remote database) and are recorded, call by call. */
function recordingStore(inner: Store): Store & { reads: string[][] } {
  const reads: string[][] = [];
  return new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop === "reads") return reads;
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== "function") return value;
      if (prop === "queryTuples") {
        return async (...args: unknown[]) => {
          reads.push(
            (args[2] as TupleQuery[]).flatMap((q) => q.entityIds.map((id) => `${q.entityType}:${id}`)),
          );
          return value.apply(target, args);
        };
      }
      return value.bind(target);
    },
  }) as Store & { reads: string[][] };
}

const alice = { type: "user", id: "alice" };
const batch = (semantic: string, ids: string[]): AccessEvaluationsRequest => ({
  subject: alice,
  action: { name: "read" },
  options: { evaluations_semantic: semantic as "execute_all" },
  evaluations: ids.map((id) => ({ resource: { type: "document", id } })),
});

describe("AuthZEN evaluations semantics: what the store is asked", () => {
  let store: Store & { reads: string[][] };
  let service: PembaService;
  beforeEach(async () => {
    const memory = new MemoryStore();
    service = new PembaService(memory);
    await service.writeSchema("t1", SCHEMA);
    await service.writeData(
      "t1",
      "",
      ["1", "3"].map((id) => ({
        entity: { type: "document", id },
        relation: "reader",
        subject: { type: "user", id: "alice", relation: "" },
      })),
      [],
    );
    store = recordingStore(memory);
    service = new PembaService(store);
  });

  it("execute_all: every question, their reads in one batch (as the bulk check)", async () => {
    const out = await evaluateMany(service, "t1", batch("execute_all", ["1", "2", "3"]), 100);
    expect(out).toEqual({ evaluations: [{ decision: true }, { decision: false }, { decision: true }] });
    expect(store.reads).toEqual([["document:1", "document:2", "document:3"]]);
  });

  it("deny_on_first_deny: document 3 is never read", async () => {
    const out = await evaluateMany(service, "t1", batch("deny_on_first_deny", ["1", "2", "3"]), 100);
    expect(out).toEqual({ evaluations: [{ decision: true }, { decision: false }] });
    expect(store.reads).toEqual([["document:1"], ["document:2"]]);
  });

  it("permit_on_first_permit: only document 1 is read", async () => {
    const out = await evaluateMany(service, "t1", batch("permit_on_first_permit", ["1", "2", "3"]), 100);
    expect(out).toEqual({ evaluations: [{ decision: true }] });
    expect(store.reads).toEqual([["document:1"]]);
  });

  it("a refused question stops deny_on_first_deny too, before any read", async () => {
    const req = batch("deny_on_first_deny", ["1", "2"]);
    req.evaluations!.unshift({ resource: { type: "spaceship", id: "1" } });
    const out = await evaluateMany(service, "t1", req, 100);
    expect(out.evaluations).toEqual([
      {
        decision: false,
        context: { error: { status: 404, message: 'resource type "spaceship" is not in the schema' } },
      },
    ]);
    expect(store.reads).toEqual([]);
  });

  it("100 evaluations read exactly what a bulk check of the same 100 questions reads", async () => {
    const ids = Array.from({ length: 100 }, (_, i) => String(i));
    const out = await evaluateMany(service, "t1", batch("execute_all", ids), 100);
    expect(out.evaluations!.map((d) => d.decision)).toEqual(ids.map((id) => id === "1" || id === "3"));
    const authzenReads = store.reads.splice(0);
    const bulk = await service.bulkCheck(
      "t1",
      { schemaVersion: "", snapToken: "", depth: 50 },
      ids.map((id) => ({
        entity: { type: "document", id },
        permission: "read",
        subject: { ...alice, relation: "" },
      })),
    );
    expect(bulk.map((o) => o.can === "CHECK_RESULT_ALLOWED")).toEqual(
      out.evaluations!.map((d) => d.decision),
    );
    expect(authzenReads).toEqual(store.reads);
    expect(authzenReads).toHaveLength(1);
  });

  it("one evaluation reads what one check reads", async () => {
    const d = await evaluate(service, "t1", {
      subject: alice,
      action: { name: "read" },
      resource: { type: "document", id: "3" },
    });
    expect(d).toEqual({ decision: true });
    expect(store.reads).toEqual([["document:3"]]);
  });
});
