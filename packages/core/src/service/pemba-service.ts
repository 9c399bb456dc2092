/**
 * PembaService: everything the HTTP API (and the validation runner, the CLI) does, over one Store, in model types.
 * Resolves metadata (schema version, snap token), validates writes against the schema BEFORE writing (one store
 * transaction per request, nothing partial), and delegates permission questions to the engine.
 */

import { type CompiledSchema, compileSchema } from "../compile/index.ts";
import * as engine from "../engine/index.ts";
import type {
  CheckOutcome,
  CheckQuery,
  ExpandNode,
  LookupEntityQuery,
  LookupSubjectQuery,
} from "../engine/types.ts";
import { PembaError } from "../errors.ts";
import {
  type Attribute,
  type AttributeFilter,
  attributeKey,
  type CheckResult,
  type Context,
  type Entity,
  type Subject,
  type Tuple,
  type TupleFilter,
  tupleKey,
} from "../model.ts";
import { nextTurn } from "../next-turn.ts";
import type { DecisionApi } from "../observe/decision-log.ts";
import type { RequestObservation } from "../observe/observation.ts";
import type { CompiledRule } from "../rules/index.ts";
import { compileRule } from "../rules/index.ts";
import type { SchemaDefinition } from "../schema/ast.ts";
import { formatTuple, printSchema, validateAttribute, validateTuple } from "../schema/index.ts";
import type { DataBundle, MaybePromise, Page, SchemaRecord, Snap, Store, Tenant } from "../store/store.ts";
import { runBundleOperations } from "./bundle-runner.ts";
import * as observed from "./observed.ts";
import { inTurnsParser, type SchemaParser } from "./parse-worker/schema-parser.ts";
import {
  type DiffOptions,
  measureSchemaDiff,
  orphanedRows,
  type SchemaDiffReport,
  schemaWriteRefusal,
} from "./schema-diff.ts";
import type { DiffBudget } from "./schema-diff-work.ts";
import { checkRuleBodies, checkSchemaSize } from "./schema-limits.ts";
import { type ResolvedSchema, SchemaRegistry } from "./schema-registry.ts";
import { SchemaVersionGenerator } from "./schema-version.ts";
import { decodeSnapTokenWithBookmark, encodeSnapToken } from "./snap-token.ts";
import type { PermissionMetadata, Question, ServiceTarget } from "./target.ts";
import { type WatchBatch, WatchHub, type WatchOptions } from "./watch.ts";

/** What a schema write may do to stored rows: `permify` anything (Permify's behaviour), `safe` orphan none. */
export const SCHEMA_WRITES = ["permify", "safe"] as const;
export type SchemaWrites = (typeof SCHEMA_WRITES)[number];

export interface ServiceOptions {
  /** How long a tenant's head schema version is trusted without asking the store (default 1000 ms). */
  headSchemaTtlMs?: number;
  /** Compiled schema versions kept in memory (default 1000). */
  maxCompiledSchemas?: number;
  /** Estimated heap bytes of the compiled schema versions kept in memory (default 256 MiB; see SchemaRegistry). */
  maxCompiledSchemaBytes?: number;
  /** Watch streams open at once (default 1000); one more is refused with ERROR_CODE_RATE_LIMITED. */
  maxWatchStreams?: number;
  /** `safe`: refuse a schema write that would orphan live rows (default `permify`: write any valid schema). */
  schemaWrites?: SchemaWrites;
  /** The work budget of one schema diff or safe schema write (default DEFAULT_DIFF_BUDGET). */
  diffBudget?: Partial<DiffBudget>;
  /**
   * The clock of evaluation times (ms since the epoch; default Date.now): read ONCE per request, when it starts,
   * and applied to every read of that request (expiring rows, see docs/EXPIRY.md). Tests pass a controllable one.
   */
  clock?: () => number;
  /**
   * Parses and checks the text of a schema write (default: on the event loop, in turns; the Node server passes a
   * worker thread's, `SchemaParseWorker` of `@pemba/core/node`).
   */
  schemaParser?: SchemaParser;
}

/** A schema diff request: the base (a stored version, "" = head, or schema text) and the new schema text. */
export interface SchemaDiffRequest extends DiffOptions {
  baseVersion: string;
  /** Schema text to diff from instead of a stored version. */
  baseSchema?: string;
  schema: string;
  /** The data to measure: "" = head. */
  snapToken: string;
}

export interface SchemaDiffAnswer {
  /** The stored version diffed from; "" when the base was given as text. */
  baseVersion: string;
  /** The snap the data was measured at. */
  snapToken: string;
  report: SchemaDiffReport;
}

/** A request's snapshot: the snap token's snap (0 = none) and the snap its reads use. */
interface RequestSnap {
  token: Snap;
  snap: MaybePromise<Snap>;
}

export interface SchemaPartials {
  write: string[];
  update: string[];
  delete: string[];
}

export interface SchemaList {
  head: string;
  schemas: SchemaRecord[];
  continuousToken: string;
}

/**
 * A snap token minted on another database than the tenant's (tenants over several databases): its snap counts
 * another database's transactions, so it is refused rather than read as a position in the tenant's.
 */
function foreignSnapToken(
  tenantId: string,
  minted: string | undefined,
  home: string | undefined,
): PembaError {
  const name = (db: string | undefined) => (db === undefined ? "the first database" : `database ${db}`);
  return new PembaError(
    "ERROR_CODE_INVALID_SNAP_TOKEN",
    `snap token of ${name(minted)}, but tenant ${tenantId} lives on ${name(home)}: a snap token is only valid for the database it was minted on`,
  );
}

const isEmptyTupleFilter = (f: TupleFilter): boolean =>
  !f.entity?.type &&
  !f.entity?.ids?.length &&
  !f.relation &&
  !f.subject?.type &&
  !f.subject?.ids?.length &&
  !f.subject?.relation;

const isEmptyAttributeFilter = (f: AttributeFilter): boolean =>
  !f.entity?.type && !f.entity?.ids?.length && !f.attributes?.length;

/** Compiles a checked definition (within the rule-body limit) in event-loop turns: each rule, then the rest. */
async function compileInTurns(definition: SchemaDefinition): Promise<CompiledSchema> {
  checkRuleBodies(definition);
  const rules = new Map<string, CompiledRule>();
  for (const [name, rule] of Object.entries(definition.rules)) {
    await nextTurn();
    rules.set(name, compileRule(rule));
  }
  await nextTurn();
  return compileSchema(definition, rules);
}

export class PembaService {
  readonly store: Store;
  readonly schemas: SchemaRegistry;
  readonly watches: WatchHub;
  readonly #versions = new SchemaVersionGenerator();
  /** The engine's evaluations over this service's store, reused across requests. */
  readonly #evaluations = new engine.EvaluationPool();
  readonly #schemaWrites: SchemaWrites;
  /** Evaluation times: one reading per request. */
  readonly clock: () => number;
  readonly #parser: SchemaParser;
  readonly #diffBudget: Partial<DiffBudget>;

  constructor(store: Store, opts: ServiceOptions = {}) {
    this.store = store;
    this.clock = opts.clock ?? Date.now;
    this.schemas = new SchemaRegistry(store, {
      headTtlMs: opts.headSchemaTtlMs,
      maxEntries: opts.maxCompiledSchemas,
      maxBytes: opts.maxCompiledSchemaBytes,
    });
    this.watches = new WatchHub(store, {
      maxStreams: opts.maxWatchStreams,
      sweep: (tenantId) => this.sweepExpired(tenantId),
    });
    this.#schemaWrites = opts.schemaWrites ?? "permify";
    this.#parser = opts.schemaParser ?? inTurnsParser;
    this.#diffBudget = opts.diffBudget ?? {};
  }

  // ---- metadata ----

  /**
   * The token a write answers: its snap, a replicated store's bookmark of it, and (tenants over several databases)
   * the name of the tenant's database.
   */
  #snapToken(tenantId: string, snap: Snap): string {
    const store = this.store;
    return encodeSnapToken(snap, store.consistencyBookmark?.(tenantId), store.snapDatabase?.(tenantId));
  }

  /** The token of a snap read (no write, so no bookmark): a watch's start, a schema diff's snap. */
  snapTokenOf(tenantId: string, snap: Snap): string {
    const last = this.#lastSnapToken;
    if (last !== undefined && last.snap === snap && last.tenantId === tenantId) return last.token;
    const token = encodeSnapToken(snap, undefined, this.store.snapDatabase?.(tenantId));
    this.#lastSnapToken = { tenantId, snap, token };
    return token;
  }

  /** The token encoded last: checks in a row mostly read at one tenant's head. */
  #lastSnapToken: { tenantId: string; snap: Snap; token: string } | undefined = undefined;

  /** Empty = head; garbage = ERROR_CODE_INVALID_SNAP_TOKEN; too old = ERROR_CODE_SNAP_TOKEN_EXPIRED. */
  resolveSnap(tenantId: string, snapToken: string): MaybePromise<Snap> {
    return this.#snapshot(tenantId, snapToken).snap;
  }

  resolveSchema(tenantId: string, schemaVersion: string): MaybePromise<ResolvedSchema> {
    return this.schemas.resolve(tenantId, schemaVersion);
  }

  /**
   * The request's snapshot, resolved ONCE: `token` is the snap token's snap (0 = none, head), `snap` the snap to
   * read at (the head snap, one statement on a remote store, or the token's once it is known to be readable).
   * Never throws: a bad token comes back as a rejected `snap`.
   */
  #snapshot(tenantId: string, snapToken: string): RequestSnap {
    try {
      if (snapToken === "") return { token: 0, snap: this.store.headSnap(tenantId) };
      const { snap: token, bookmark, database } = decodeSnapTokenWithBookmark(snapToken);
      // tenants over several databases: a snap (and a bookmark) means something in its own database only
      const home = this.store.snapDatabase?.(tenantId);
      if (database !== home) throw foreignSnapToken(tenantId, database, home);
      // a replicated store (D1) reads at least as new as the write's bookmark
      if (bookmark !== undefined) this.store.readAfterBookmark?.(tenantId, bookmark);
      const readable = this.store.assertSnapReadable(tenantId, token);
      return { token, snap: readable instanceof Promise ? readable.then(() => token) : token };
    } catch (e) {
      return { token: 0, snap: Promise.reject(e) };
    }
  }

  /** The schema (a head no older than the token) and the snap, both in flight at once; a schema error wins. */
  async #resolve(
    tenantId: string,
    schemaVersion: string,
    at: RequestSnap,
    cached?: ResolvedSchema,
  ): Promise<{ schema: ResolvedSchema; snap: Snap }> {
    if (at.snap instanceof Promise) {
      at.snap.catch(() => {}); // awaited below, after the schema
      // a store that reports the head schema its look read (a lazy replica, for a token newer than its copy) is
      // asked first: its look may spare the registry its own read of the head
      if (cached === undefined && at.token > 0 && this.store.onHeadSchema !== undefined) {
        cached = this.schemas.cached(tenantId, schemaVersion, at.token);
        if (cached === undefined) await at.snap.catch(() => {});
      }
    }
    const schema = cached ?? (await this.schemas.resolve(tenantId, schemaVersion, at.token));
    return { schema, snap: await at.snap };
  }

  /** A permission request's compiled schema and where it is evaluated (its snap resolved). */
  async target(
    tenantId: string,
    meta: PermissionMetadata,
    context?: Context,
  ): Promise<{ schema: ResolvedSchema; target: ServiceTarget }> {
    const now = this.clock();
    const { schema, snap } = await this.#resolve(
      tenantId,
      meta.schemaVersion,
      this.#snapshot(tenantId, meta.snapToken),
    );
    return { schema, target: this.#evaluationTarget(tenantId, snap, now, meta, context) };
  }

  /**
   * The expiry sweep of a tenant: when a live row's expiry has passed (one cheap read), deletes every such row in
   * ONE write, so the change feed and watch report the expiry as a delete and GC removes the rows once that write
   * is older than the GC window. Reads never wait for it: they hide expired rows by their evaluation time.
   * Returns the sweep's snap token, undefined when nothing was due.
   */
  async sweepExpired(tenantId: string, now: number = this.clock()): Promise<string | undefined> {
    const next = await this.store.nextExpiry(tenantId);
    if (next === undefined || next > now) return undefined;
    return this.#snapToken(tenantId, await this.store.write(tenantId, { expireUpTo: now }));
  }

  /** The sweep of every tenant (the GC timer runs it before collecting); returns how many tenants swept rows. */
  async sweepAllExpired(now: number = this.clock()): Promise<number> {
    let swept = 0;
    let cursor: string | undefined;
    do {
      const page = await this.store.listTenants(100, cursor);
      for (const t of page.items) if ((await this.sweepExpired(t.id, now)) !== undefined) swept++;
      cursor = page.cursor || undefined;
    } while (cursor);
    return swept;
  }

  // ---- tenancy ----

  createTenant(id: string, name: string): Promise<Tenant> {
    return this.store.createTenant(id, name);
  }

  listTenants(pageSize: number, continuousToken: string): Promise<Page<Tenant>> {
    return this.store.listTenants(pageSize, continuousToken || undefined);
  }

  async deleteTenant(id: string): Promise<Tenant> {
    const deleted = await this.store.deleteTenant(id);
    if (deleted === undefined) throw new PembaError("ERROR_CODE_NOT_FOUND");
    this.schemas.forgetTenant(id);
    return deleted;
  }

  // ---- schemas ----

  /**
   * Parses + compiles (errors are PembaError, gRPC 13 with a line:col message), stores, makes it head. The parse
   * runs on the service's SchemaParser: a worker thread's (Node server), or the event loop's in turns of their own
   * (the lexer, the parser, the checks: together they were the longest turn of a 64 KiB schema's write).
   */
  async writeSchema(tenantId: string, text: string): Promise<string> {
    checkSchemaSize(text);
    return this.#saveSchema(tenantId, text, await this.#parser.parse(text));
  }

  /**
   * Compiles the parsed definition (within the write limits of schema-limits.ts), stores it, makes it head. The work
   * is cut into event-loop turns (each rule, the rest) so other tenants' requests are answered between them.
   */
  async #saveSchema(
    tenantId: string,
    text: string,
    definition: SchemaDefinition,
    version = this.#versions.next(),
  ): Promise<string> {
    const compiled = await compileInTurns(definition);
    if (this.#schemaWrites === "safe") await this.#assertNoOrphans(tenantId, definition);
    await this.store.writeSchema(tenantId, version, text);
    this.schemas.remember(tenantId, version, text, definition, compiled);
    this.schemas.setHead(tenantId, version);
    return version;
  }

  /**
   * A dump's schema (data import), kept under the dump's own version so an export of the import names the same one:
   * nothing to do when the tenant has that version with the same text; another text under it fails. Otherwise
   * written as any schema write (compiled, checked, head).
   */
  async importSchema(
    tenantId: string,
    version: string,
    text: string,
    definition?: SchemaDefinition,
  ): Promise<void> {
    const existing = await this.store.readSchema(tenantId, version);
    if (existing !== undefined) {
      if (existing.schema === text) return;
      throw new PembaError("ERROR_CODE_VALIDATION", `schema version ${version} exists with another text`);
    }
    checkSchemaSize(text);
    await this.#saveSchema(tenantId, text, definition ?? (await this.#parser.parse(text)), version);
  }

  /** Applies `partials` (entity name -> write/update/delete statements) on `schemaVersion` (or head). */
  async partialWriteSchema(
    tenantId: string,
    schemaVersion: string,
    partials: Record<string, SchemaPartials>,
  ): Promise<string> {
    const base = await this.schemas.resolve(tenantId, schemaVersion);
    const { text, definition } = await this.#parser.partialWrite(printSchema(base.definition), partials);
    return this.#saveSchema(tenantId, text, definition);
  }

  /**
   * Safe schema writes: the head schema (none: nothing to orphan) diffed to `definition` on the live data; any row
   * it would orphan refuses the write with ERROR_CODE_VALIDATION naming them. Decisions are not asked (counts only).
   */
  async #assertNoOrphans(tenantId: string, definition: SchemaDefinition): Promise<void> {
    if ((await this.store.headSchema(tenantId)) === undefined) return;
    const head = await this.schemas.resolve(tenantId, "");
    const snap = await this.store.headSnap(tenantId);
    const report = await measureSchemaDiff(
      this.store,
      tenantId,
      snap,
      head,
      { definition },
      { decisions: false, at: this.clock(), requestName: "safe schema write", budget: this.#diffBudget },
    );
    if (orphanedRows(report) > 0) throw schemaWriteRefusal(report);
  }

  /**
   * Safe schema writes: a data write naming an older schema version must not store rows the head schema has dropped
   * (the safe write that dropped them found none, and a later diff would count them as orphans).
   */
  async #assertFitsHead(
    tenantId: string,
    version: string,
    tuples: Iterable<Tuple>,
    attributes: Iterable<Attribute>,
  ): Promise<void> {
    const head = await this.schemas.resolve(tenantId, "");
    if (head.version === version) return;
    const refuse = (row: string, error: unknown) =>
      new PembaError(
        "ERROR_CODE_VALIDATION",
        `data write names schema version ${version}, but ${row} does not fit the head schema ${head.version} (${
          error instanceof PembaError ? error.message : String(error)
        }); schema writes are "safe", so rows the head schema dropped are not written`,
      );
    for (const t of tuples) {
      try {
        validateTuple(head.definition, t);
      } catch (error) {
        throw refuse(`tuple ${formatTuple(t)}`, error);
      }
    }
    for (const a of attributes) {
      try {
        validateAttribute(head.definition, a);
      } catch (error) {
        throw refuse(`attribute ${a.entity.type}:${a.entity.id}$${a.attribute}`, error);
      }
    }
  }

  /**
   * What writing `schema` over the base would do to the live data at the snap token (a Pemba extension): removals
   * with the rows they orphan, attribute type changes with the values that no longer fit, and decision flips.
   */
  async diffSchema(tenantId: string, req: SchemaDiffRequest): Promise<SchemaDiffAnswer> {
    // the same size as a write, parsed where writes are (a worker thread, or the event loop in turns)
    checkSchemaSize(req.schema, "SchemaDiffRequest");
    const baseText = req.baseSchema ?? "";
    if (baseText !== "") checkSchemaSize(baseText, "SchemaDiffRequest", "BaseSchema");
    const definition = await this.#parser.parse(req.schema);
    const to = { definition, compiled: await compileInTurns(definition) };
    let from: { version: string; definition: SchemaDefinition; compiled: CompiledSchema };
    if (baseText !== "") {
      const base = await this.#parser.parse(baseText);
      from = { version: "", definition: base, compiled: await compileInTurns(base) };
    } else from = await this.schemas.resolve(tenantId, req.baseVersion);
    const snap = await this.resolveSnap(tenantId, req.snapToken);
    const report = await measureSchemaDiff(this.store, tenantId, snap, from, to, {
      budget: this.#diffBudget,
      ...req,
      at: this.clock(),
    });
    return { baseVersion: from.version, snapToken: this.snapTokenOf(tenantId, snap), report };
  }

  readSchema(tenantId: string, schemaVersion: string): MaybePromise<ResolvedSchema> {
    return this.schemas.resolve(tenantId, schemaVersion);
  }

  async listSchemas(tenantId: string, pageSize: number, continuousToken: string): Promise<SchemaList> {
    const head = await this.store.headSchema(tenantId);
    if (head === undefined) throw new PembaError("ERROR_CODE_SCHEMA_NOT_FOUND");
    const page = await this.store.listSchemas(tenantId, pageSize, continuousToken || undefined);
    return { head: head.version, schemas: page.items, continuousToken: page.cursor };
  }

  // ---- data ----

  /**
   * Validates every tuple and attribute against the schema version first (tuples de-duplicated, the last value of
   * an attribute wins), then writes all of them in one transaction. Returns the snap token of the write.
   */
  async writeData(
    tenantId: string,
    schemaVersion: string,
    tuples: Tuple[],
    attributes: Attribute[],
  ): Promise<string> {
    const schema = await this.schemas.resolve(tenantId, schemaVersion);
    const uniqueTuples = new Map<string, Tuple>();
    for (const t of tuples) {
      validateTuple(schema.definition, t);
      uniqueTuples.set(tupleKey(t), t);
    }
    const uniqueAttributes = new Map<string, Attribute>();
    for (const a of attributes) {
      validateAttribute(schema.definition, a);
      uniqueAttributes.set(attributeKey(a), a);
    }
    if (this.#schemaWrites === "safe" && schemaVersion !== "")
      await this.#assertFitsHead(tenantId, schema.version, uniqueTuples.values(), uniqueAttributes.values());
    const snap = await this.store.write(tenantId, {
      tuples: [...uniqueTuples.values()],
      attributes: [...uniqueAttributes.values()],
    });
    return this.#snapToken(tenantId, snap);
  }

  /** data/delete: at least one non-empty filter, else ERROR_CODE_VALIDATION. */
  async deleteData(
    tenantId: string,
    tupleFilter: TupleFilter,
    attributeFilter: AttributeFilter,
  ): Promise<string> {
    const deleteTuples = !isEmptyTupleFilter(tupleFilter);
    const deleteAttributes = !isEmptyAttributeFilter(attributeFilter);
    // Permify v1.7.3 answers empty filters with 200 `{"snap_token":""}` and deletes nothing (its filter check
    // error is converted with code OK, as for relationships/delete); never "delete everything".
    if (!deleteTuples && !deleteAttributes) return "";
    const snap = await this.store.write(tenantId, {
      deleteTupleFilters: deleteTuples ? [tupleFilter] : [],
      deleteAttributeFilters: deleteAttributes ? [attributeFilter] : [],
    });
    return this.#snapToken(tenantId, snap);
  }

  /** relationships/delete: an empty filter deletes nothing and answers snap token "" (Permify's behaviour). */
  async deleteRelationships(tenantId: string, filter: TupleFilter): Promise<string> {
    if (isEmptyTupleFilter(filter)) return "";
    const snap = await this.store.write(tenantId, { deleteTupleFilters: [filter] });
    return this.#snapToken(tenantId, snap);
  }

  async readRelationships(
    tenantId: string,
    snapToken: string,
    filter: TupleFilter,
    pageSize: number,
    continuousToken: string,
  ): Promise<Page<Tuple>> {
    const now = this.clock();
    const snap = await this.resolveSnap(tenantId, snapToken);
    return this.store.readTuples(tenantId, snap, filter, pageSize, continuousToken || undefined, now);
  }

  async readAttributes(
    tenantId: string,
    snapToken: string,
    filter: AttributeFilter,
    pageSize: number,
    continuousToken: string,
  ): Promise<Page<Attribute>> {
    const now = this.clock();
    const snap = await this.resolveSnap(tenantId, snapToken);
    return this.store.readAttributes(tenantId, snap, filter, pageSize, continuousToken || undefined, now);
  }

  // ---- bundles ----

  async writeBundles(tenantId: string, bundles: DataBundle[]): Promise<string[]> {
    await this.store.writeBundles(tenantId, bundles);
    return bundles.map((b) => b.name);
  }

  async readBundle(tenantId: string, name: string): Promise<DataBundle> {
    const bundle = await this.store.readBundle(tenantId, name);
    if (bundle === undefined) throw new PembaError("ERROR_CODE_BUNDLE_NOT_FOUND");
    return bundle;
  }

  async deleteBundle(tenantId: string, name: string): Promise<string> {
    if (!(await this.store.deleteBundle(tenantId, name))) throw new PembaError("ERROR_CODE_BUNDLE_NOT_FOUND");
    return name;
  }

  /** Renders the bundle with `args`, validates everything against the head schema, writes it in one transaction. */
  async runBundle(tenantId: string, name: string, args: Record<string, string>): Promise<string> {
    const bundle = await this.store.readBundle(tenantId, name);
    if (bundle === undefined) throw new PembaError("ERROR_CODE_BUNDLE_NOT_FOUND");
    const schema = await this.schemas.resolve(tenantId, "");
    const write = runBundleOperations(schema.definition, bundle, args);
    const snap = await this.store.write(tenantId, write);
    return this.#snapToken(tenantId, snap);
  }

  // ---- watch ----

  /**
   * The change sets after `snapToken` ("" = from now on), until `signal` aborts; each yielded batch is one
   * transaction. Caught-up streams share one poll per tenant every `pollMs`. Throws ERROR_CODE_RATE_LIMITED when
   * `maxWatchStreams` streams are open.
   */
  async watch(
    tenantId: string,
    snapToken: string,
    opts: WatchOptions = {},
  ): Promise<AsyncGenerator<WatchBatch>> {
    return this.watches.open(tenantId, await this.resolveSnap(tenantId, snapToken), opts);
  }

  // ---- permissions ----

  /**
   * The hot path: with the schema version compiled and cached, a check resolves the head snap once (no statement
   * with a replica or a synchronous store, one on a remote store) and runs the engine without another await.
   */
  check(
    tenantId: string,
    meta: PermissionMetadata,
    query: CheckQuery,
    context?: Context,
    obs?: RequestObservation,
  ): MaybePromise<CheckOutcome> {
    // a traced request: spans for schema resolution and evaluation; a logged one: the fast path, then its record
    if (obs?.tracer !== undefined) return observed.observedCheck(this, obs, tenantId, meta, query, context);
    const now = this.clock();
    const at = this.#snapshot(tenantId, meta.snapToken);
    const schema = this.schemas.cached(tenantId, meta.schemaVersion, at.token);
    if (schema !== undefined && typeof at.snap === "number") {
      const outcome = engine.check(
        schema.compiled,
        this.#evaluationTarget(tenantId, at.snap, now, meta, context),
        query,
      );
      return obs === undefined
        ? outcome
        : observed.recordCheck(this, obs, schema, at.snap, meta, query, context, outcome);
    }
    return this.#resolve(tenantId, meta.schemaVersion, at, schema).then(({ schema, snap }) => {
      const outcome = engine.check(
        schema.compiled,
        this.#evaluationTarget(tenantId, snap, now, meta, context),
        query,
      );
      return obs === undefined
        ? outcome
        : observed.recordCheck(this, obs, schema, snap, meta, query, context, outcome);
    });
  }

  /**
   * A check whose question is built from the compiled schema (the AuthZEN mapping reads names and attribute types
   * from it), on the check's fast path. `ask` answering undefined (a question the schema cannot pose) answers
   * undefined without an evaluation. An observed request (`obs`) records the decision as `api`; a traced one runs
   * in the schema-resolution and evaluation spans.
   */
  checkWith(
    tenantId: string,
    meta: PermissionMetadata,
    ask: (schema: CompiledSchema) => Question | undefined,
    obs?: RequestObservation,
    api: DecisionApi = "check",
  ): MaybePromise<CheckOutcome | undefined> {
    if (obs?.tracer !== undefined) return observed.observedCheckWith(this, obs, tenantId, meta, ask, api);
    const now = this.clock();
    const at = this.#snapshot(tenantId, meta.snapToken);
    const decide = (schema: ResolvedSchema, snap: Snap) => {
      const question = ask(schema.compiled);
      if (question === undefined) return undefined;
      const target = this.#evaluationTarget(tenantId, snap, now, meta, question.context);
      target.contextualAttributesFirst = question.contextualAttributesFirst;
      const outcome = engine.check(schema.compiled, target, question.query);
      if (obs === undefined) return outcome;
      const { query, context } = question;
      return observed.recordCheck(this, obs, schema, snap, meta, query, context, outcome, api);
    };
    const schema = this.schemas.cached(tenantId, meta.schemaVersion, at.token);
    if (schema !== undefined && typeof at.snap === "number") return decide(schema, at.snap);
    return this.#resolve(tenantId, meta.schemaVersion, at, schema).then(({ schema, snap }) =>
      decide(schema, snap),
    );
  }

  /**
   * The compiled schema, where questions are evaluated (without context) and the snap token of that snap: resolved
   * once for the many questions of one request (AuthZEN's evaluations and searches).
   */
  async evaluationTarget(
    tenantId: string,
    meta: PermissionMetadata,
  ): Promise<{ schema: CompiledSchema; target: ServiceTarget; snapToken: string; schemaVersion: string }> {
    const { schema, target } = await this.target(tenantId, meta);
    return {
      schema: schema.compiled,
      target,
      snapToken: this.snapTokenOf(tenantId, target.snap),
      schemaVersion: schema.version,
    };
  }

  /** Where a question is evaluated: this service's store and evaluation pool, at `snap`, evaluation time `now`. */
  #evaluationTarget(
    tenantId: string,
    snap: Snap,
    now: number,
    meta: PermissionMetadata,
    context?: Context,
  ): ServiceTarget {
    return {
      store: this.store,
      tenantId,
      snap,
      at: now,
      depth: meta.depth,
      context,
      evaluations: this.#evaluations,
    };
  }

  /** Results in request order; an engine error for one item makes that item DENIED (Permify's behaviour). */
  async bulkCheck(
    tenantId: string,
    meta: PermissionMetadata,
    queries: CheckQuery[],
    context?: Context,
    obs?: RequestObservation,
  ): Promise<CheckOutcome[]> {
    if (obs !== undefined) return observed.observedBulkCheck(this, obs, tenantId, meta, queries, context);
    const { schema, target } = await this.target(tenantId, meta, context);
    return engine.bulkCheck(schema.compiled, target, queries);
  }

  /** A check's decision and its proof (Pemba's explain extension); errors are the check's. */
  async explain(
    tenantId: string,
    meta: PermissionMetadata,
    query: CheckQuery,
    context?: Context,
    obs?: RequestObservation,
  ): Promise<engine.Explanation> {
    if (obs !== undefined) return observed.observedExplain(this, obs, tenantId, meta, query, context);
    const { schema, target } = await this.target(tenantId, meta, context);
    return engine.explain({ ...target, schema: schema.compiled }, query);
  }

  async expand(
    tenantId: string,
    meta: Omit<PermissionMetadata, "depth">,
    entity: Entity,
    permission: string,
    context?: Context,
  ): Promise<ExpandNode> {
    const { schema, target } = await this.target(tenantId, { ...meta, depth: 100 }, context);
    return engine.expand(schema.compiled, target, { entity, permission });
  }

  async lookupEntity(
    tenantId: string,
    meta: PermissionMetadata,
    query: LookupEntityQuery,
    context?: Context,
    obs?: RequestObservation,
  ): Promise<{ entityIds: string[]; continuousToken: string }> {
    if (obs !== undefined) return observed.observedLookupEntity(this, obs, tenantId, meta, query, context);
    const { schema, target } = await this.target(tenantId, meta, context);
    return engine.lookupEntity(schema.compiled, target, query);
  }

  async lookupSubject(
    tenantId: string,
    meta: PermissionMetadata,
    query: LookupSubjectQuery,
    context?: Context,
    obs?: RequestObservation,
  ): Promise<{ subjectIds: string[]; continuousToken: string }> {
    if (obs !== undefined) return observed.observedLookupSubject(this, obs, tenantId, meta, query, context);
    const { schema, target } = await this.target(tenantId, meta, context);
    return engine.lookupSubject(schema.compiled, target, query);
  }

  async subjectPermission(
    tenantId: string,
    meta: PermissionMetadata,
    entity: Entity,
    subject: Subject,
    onlyPermission: boolean,
    context?: Context,
    obs?: RequestObservation,
  ): Promise<Record<string, CheckResult>> {
    if (obs !== undefined) {
      return observed.observedSubjectPermission(
        this,
        obs,
        tenantId,
        meta,
        entity,
        subject,
        onlyPermission,
        context,
      );
    }
    const { schema, target } = await this.target(tenantId, meta, context);
    return engine.subjectPermission(schema.compiled, target, { entity, subject, onlyPermission });
  }
}
