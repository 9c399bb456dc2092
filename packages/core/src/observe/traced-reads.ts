/**
 * TracedReads: the engine's reads of one traced evaluation, each a `pemba.store` span under the evaluation's span.
 * Every engine read passes here, whatever the store (memory, the replica, any SQL driver), so the store layer is
 * wrapped once for all of them. Only a recorded evaluation reads through it; every other one reads the store itself.
 */
import type { Context, Span, Tracer } from "@opentelemetry/api";
import type { Attribute, Tuple } from "../model.ts";
import { queryBoth } from "../store/capabilities.ts";
import { ForwardingStore } from "../store/proxies/forwarding.ts";
import { ReplicaStore } from "../store/proxies/replica/routing.ts";
import type {
  AttributeQuery,
  MaybePromise,
  Snap,
  Store,
  SubjectTupleQuery,
  TupleQuery,
} from "../store/store.ts";
import { endFailed, SPAN } from "./tracing.ts";

/** Rows a read answered: tuples + attributes, ids. */
type Rows = Tuple[] | Attribute[] | string[] | [Tuple[], Attribute[]];

function rowCount(statement: string, rows: Rows): number {
  if (statement === "query_tuples_and_attributes") {
    const [tuples, attributes] = rows as [Tuple[], Attribute[]];
    return tuples.length + attributes.length;
  }
  return rows.length;
}

export class TracedReads extends ForwardingStore {
  readonly #tracer: Tracer;
  readonly #parent: Context;
  /** The store has an in-memory replica: a read it answers synchronously came from memory. */
  readonly #replica: boolean;

  constructor(inner: Store, tracer: Tracer, parent: Context) {
    super(inner);
    this.#tracer = tracer;
    this.#parent = parent;
    this.#replica = inner instanceof ReplicaStore;
  }

  /**
   * Runs one read in a span: `pemba.store.statement` (the read's kind), `pemba.store.rows` (rows answered),
   * `pemba.store.replica` (answered from the in-memory replica: without a round trip to the database).
   */
  #traced<R extends Rows>(statement: string, tenantId: string, snap: Snap, read: () => MaybePromise<R>) {
    const span: Span = this.#tracer.startSpan(
      SPAN.store,
      { attributes: { "pemba.store.statement": statement, "pemba.tenant": tenantId, "pemba.snap": snap } },
      this.#parent,
    );
    let result: MaybePromise<R>;
    try {
      result = read();
    } catch (error) {
      endFailed(span, error);
      throw error;
    }
    if (result instanceof Promise) {
      span.setAttribute("pemba.store.replica", false);
      return result.then(
        (rows) => {
          span.setAttribute("pemba.store.rows", rowCount(statement, rows));
          span.end();
          return rows;
        },
        (error: unknown) => {
          endFailed(span, error);
          throw error;
        },
      );
    }
    span.setAttribute("pemba.store.replica", this.#replica);
    span.setAttribute("pemba.store.rows", rowCount(statement, result));
    span.end();
    return result;
  }

  override queryTuples(
    tenantId: string,
    snap: Snap,
    queries: TupleQuery[],
    at?: number,
  ): MaybePromise<Tuple[]> {
    return this.#traced("query_tuples", tenantId, snap, () =>
      this.inner.queryTuples(tenantId, snap, queries, at),
    );
  }

  override querySubjectTuples(
    tenantId: string,
    snap: Snap,
    queries: SubjectTupleQuery[],
    at?: number,
  ): MaybePromise<Tuple[]> {
    return this.#traced("query_subject_tuples", tenantId, snap, () =>
      this.inner.querySubjectTuples(tenantId, snap, queries, at),
    );
  }

  override queryAttributes(
    tenantId: string,
    snap: Snap,
    queries: AttributeQuery[],
    at?: number,
  ): MaybePromise<Attribute[]> {
    return this.#traced("query_attributes", tenantId, snap, () =>
      this.inner.queryAttributes(tenantId, snap, queries, at),
    );
  }

  override queryTuplesAndAttributes(
    tenantId: string,
    snap: Snap,
    tuples: TupleQuery[],
    attributes: AttributeQuery[],
    at?: number,
  ): MaybePromise<[Tuple[], Attribute[]]> {
    return this.#traced("query_tuples_and_attributes", tenantId, snap, () =>
      queryBoth(this.inner, tenantId, snap, tuples, attributes, at),
    );
  }

  override listObjectIds(tenantId: string, snap: Snap, type: string, at?: number): MaybePromise<string[]> {
    return this.#traced("list_object_ids", tenantId, snap, () =>
      this.inner.listObjectIds(tenantId, snap, type, at),
    );
  }
}
