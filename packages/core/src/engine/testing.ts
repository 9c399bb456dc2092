/** Test helpers: a schema + data in a real MemoryStore, and a counting wrapper over its engine reads. */
import { type CompiledSchema, compileSchema } from "../compile/index.ts";
import type { Context } from "../model.ts";
import {
  parseAttributeString,
  parseEntityString,
  parseSchema,
  parseSubjectString,
  parseTupleString,
} from "../schema/index.ts";
import { MemoryStore } from "../store/memory/memory-store.ts";
import type { Store } from "../store/store.ts";
import { check } from "./check.ts";
import { EvaluationPool } from "./evaluation/pool.ts";
import type { EvaluationTarget } from "./types.ts";

export const TENANT = "t1";

export interface Fixture {
  compiled: CompiledSchema;
  store: MemoryStore;
  /** The pool of every target of the fixture (pass one to `fixture` to share it between fixtures). */
  evaluations: EvaluationPool;
  target(opts?: { depth?: number; context?: Partial<Context>; store?: Store }): EvaluationTarget;
  /** `await can("doc:1", "view", "user:1")` → true/false (throws engine errors). */
  can(
    entity: string,
    permission: string,
    subject: string,
    opts?: { depth?: number; context?: Partial<Context> },
  ): Promise<boolean>;
}

export async function fixture(
  schema: string,
  tuples: string[] = [],
  attributes: string[] = [],
  evaluations: EvaluationPool = new EvaluationPool(),
): Promise<Fixture> {
  const compiled = compileSchema(parseSchema(schema));
  const store = new MemoryStore();
  if (tuples.length > 0 || attributes.length > 0)
    await store.write(TENANT, {
      tuples: tuples.map(parseTupleString),
      attributes: attributes.map(parseAttributeString),
    });
  const target: Fixture["target"] = (opts = {}) => ({
    store: opts.store ?? store,
    tenantId: TENANT,
    snap: store.headSnap(TENANT),
    depth: opts.depth ?? 50,
    context: opts.context ? { tuples: [], attributes: [], data: {}, ...opts.context } : undefined,
    evaluations,
  });
  return {
    compiled,
    store,
    evaluations,
    target,
    async can(entity, permission, subject, opts) {
      const out = await check(compiled, target(opts), {
        entity: parseEntityString(entity),
        permission,
        subject: parseSubjectString(subject),
      });
      return out.can === "CHECK_RESULT_ALLOWED";
    },
  };
}

/** A Store that forwards to another and counts engine read calls. */
export function countingStore(inner: Store): Store & { calls: Record<string, number> } {
  const calls: Record<string, number> = {
    queryTuples: 0,
    querySubjectTuples: 0,
    queryAttributes: 0,
    listObjectIds: 0,
  };
  return new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop === "calls") return calls;
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        if (typeof prop === "string" && prop in calls) calls[prop]++;
        return value.apply(target, args);
      };
    },
  }) as Store & { calls: Record<string, number> };
}
