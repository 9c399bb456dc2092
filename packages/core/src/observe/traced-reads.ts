/**
 * TracedReads: the engine's reads of one traced evaluation, each a `pemba.store` span under the evaluation's span.
 * Every engine read passes here, whatever the store (memory, the replica, any SQL driver), so the store layer is
 * wrapped once for all of them. Only a recorded evaluation reads through it; every other one reads the store itself.
 */
import type { Context, Span, Tracer } from "@opentelemetry/api";
import type { Attribute, Tuple } from "../model.ts";
import { type CombinedReads, type EngineReads, queryBoth } from "../store/capabilities.ts";
import { ForwardingStore } from "../store/proxies/forwarding.ts";
import { type ReadReport, ReplicaStore } from "../store/proxies/replica/routing.ts";
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
type Rows = readonly Tuple[] | readonly Attribute[] | string[] | [readonly Tuple[], readonly Attribute[]];

function rowCount(statement: string, rows: Rows): number {
  if (statement === "query_tuples_and_attributes") {
    const [tuples, attributes] = rows as [readonly Tuple[], readonly Attribute[]];
    return tuples.length + attributes.length;
  }
  return rows.length;
}

export class TracedReads extends ForwardingStore {
  readonly #tracer: Tracer;
  readonly #parent: Context;
  /** The store is the in-memory replica: it reports whether each read went to the database behind it. */
  readonly #replica: ReplicaStore | undefined;

  constructor(inner: Store, tracer: Tracer, parent: Context) {
    super(inner);
    this.#tracer = tracer;
    this.#parent = parent;
    this.#replica = inner instanceof ReplicaStore ? inner : undefined;
  }

  /**
   * Runs one read in a span: `pemba.store.statement` (the read's kind), `pemba.store.rows` (rows answered),
   * `pemba.store.replica` (answered from the in-memory replica's working set alone: without a round trip to the
   * database, as the replica reports it).
   */
  #traced<R extends Rows>(
    statement: string,
    tenantId: string,
    snap: Snap,
    read: (reads: EngineReads & Partial<CombinedReads>) => MaybePromise<R>,
    forwarded = false,
  ) {
    const span: Span = this.#tracer.startSpan(
      SPAN.store,
      { attributes: { "pemba.store.statement": statement, "pemba.tenant": tenantId, "pemba.snap": snap } },
      this.#parent,
    );
    const report: ReadReport = { store: this.#replica === undefined || forwarded };
    let result: MaybePromise<R>;
    try {
      result = read(this.#replica?.reporting(report) ?? this.inner);
    } catch (error) {
      endFailed(span, error);
      throw error;
    }
    if (result instanceof Promise) {
      return result.then(
        (rows) => {
          span.setAttribute("pemba.store.replica", !report.store);
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
    span.setAttribute("pemba.store.replica", !report.store);
    span.setAttribute("pemba.store.rows", rowCount(statement, result));
    span.end();
    return result;
  }

  override queryTuples(
    tenantId: string,
    snap: Snap,
    queries: TupleQuery[],
    at?: number,
  ): MaybePromise<readonly Tuple[]> {
    return this.#traced("query_tuples", tenantId, snap, (reads) =>
      reads.queryTuples(tenantId, snap, queries, at),
    );
  }

  override querySubjectTuples(
    tenantId: string,
    snap: Snap,
    queries: SubjectTupleQuery[],
    at?: number,
  ): MaybePromise<readonly Tuple[]> {
    return this.#traced("query_subject_tuples", tenantId, snap, (reads) =>
      reads.querySubjectTuples(tenantId, snap, queries, at),
    );
  }

  override queryAttributes(
    tenantId: string,
    snap: Snap,
    queries: AttributeQuery[],
    at?: number,
  ): MaybePromise<readonly Attribute[]> {
    return this.#traced("query_attributes", tenantId, snap, (reads) =>
      reads.queryAttributes(tenantId, snap, queries, at),
    );
  }

  override queryTuplesAndAttributes(
    tenantId: string,
    snap: Snap,
    tuples: TupleQuery[],
    attributes: AttributeQuery[],
    at?: number,
  ): MaybePromise<[readonly Tuple[], readonly Attribute[]]> {
    return this.#traced("query_tuples_and_attributes", tenantId, snap, (reads) =>
      queryBoth(reads, tenantId, snap, tuples, attributes, at),
    );
  }

  override listObjectIds(tenantId: string, snap: Snap, type: string, at?: number): MaybePromise<string[]> {
    // id listings are the store's (the replica forwards them)
    return this.#traced(
      "list_object_ids",
      tenantId,
      snap,
      () => this.inner.listObjectIds(tenantId, snap, type, at),
      true,
    );
  }
}
