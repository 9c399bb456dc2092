/**
 * What a schema change does to the stored data, measured at one snap: the live rows each removal would orphan,
 * the stored attribute values that no longer fit a changed type, and the (entity, subject) pairs whose decision
 * flips per permission, with examples. Only the rows a removal or type change touches are read (filtered reads);
 * decisions are asked only for permissions whose definition or a dependency changed (schema/diff.ts), in batches
 * (engine bulk check: one store call per walk level for the whole batch). On a store that is not in memory the
 * sample's walks and both schemas' checks share one ReadCache (each key read once per diff), and the orphan counts
 * are COUNT statements (RowCounts).
 */
import { type CompiledSchema, compileSchema } from "../compile/index.ts";
import { bulkCheck } from "../engine/check.ts";
import type { EvaluationTarget } from "../engine/types.ts";
import { PembaError } from "../errors.ts";
import {
  type Attribute,
  type AttributeFilter,
  type CheckResult,
  type Entity,
  type Subject,
  type Tuple,
  type TupleFilter,
  tupleKey,
} from "../model.ts";
import { seededRandom } from "../random.ts";
import { own, type SchemaDefinition } from "../schema/ast.ts";
import {
  type AttributeTypeChange,
  diffSchemas,
  type SchemaAddition,
  type SchemaRemoval,
} from "../schema/diff.ts";
import { hasRowCounts } from "../store/capabilities.ts";
import { ReadCache } from "../store/proxies/read-cache.ts";
import { ReplicaStore } from "../store/proxies/replica/index.ts";
import type { Snap, Store } from "../store/store.ts";
import { scanRows } from "./schema-diff-scan.ts";
import { CHECK_BATCH, type DiffBudget, DiffWork } from "./schema-diff-work.ts";

/** Pairs checked per permission when not told otherwise; above it, a sample of this many. */
export const DEFAULT_DIFF_SAMPLE = 5_000;
/** The sample's seed: the same data and schemas give the same sample. */
export const DIFF_SAMPLE_SEED = 1;
/** Example pairs per direction (ALLOWED to DENIED, DENIED to ALLOWED) and permission. */
const EXAMPLES = 5;
const PAGE = 10_000;
const DEPTH = 100;
/** Hops a sampled pair's walk from the entity along stored relationships takes at most. */
const WALK_HOPS = 4;

export interface RemovalImpact extends SchemaRemoval {
  /** Live tuples that would be orphaned (undefined: not measured, no data). */
  tuples?: number;
  /** Live attribute values that would be orphaned. */
  attributes?: number;
}

export interface TypeChangeImpact extends AttributeTypeChange {
  /** Stored values of the attribute. */
  values?: number;
  /** Stored values whose type is not the new one: the engine answers ERROR_CODE_ATTRIBUTE_TYPE_MISMATCH for them. */
  mismatched?: number;
}

export interface DecisionFlip {
  entity: Entity;
  subject: Subject;
  from: CheckResult;
  to: CheckResult;
}

export interface PermissionImpact {
  entity: string;
  permission: string;
  subjectTypes: string[];
  /** Stored entities of the type x stored subjects of the subject types. */
  pairs?: number;
  /** Pairs asked under both schemas. */
  checked?: number;
  /** True when `checked` is a sample of `pairs` (half uniform, half along stored relationships; seeded). */
  sampled?: boolean;
  allowedToDenied?: number;
  deniedToAllowed?: number;
  examples?: DecisionFlip[];
}

export interface SchemaDiffReport {
  removed: RemovalImpact[];
  added: SchemaAddition[];
  attributeTypeChanges: TypeChangeImpact[];
  permissions: PermissionImpact[];
  unchangedPermissions: number;
  /** Whether data was measured (counts and flips); false = structure only. */
  measured: boolean;
  sample: {
    size: number;
    seed: number;
    /** Pairs the diff may ask over all permissions (its work budget per request). */
    pairBudget: number;
    /** True when the budget made a permission's sample smaller than `size`. */
    limitedByBudget: boolean;
  };
  /** The work done: rows read, pairs asked, event-loop turns given to other requests. */
  work: { rows: number; pairs: number; turns: number };
}

export interface DiffOptions {
  /** Pairs per permission before sampling (default DEFAULT_DIFF_SAMPLE). */
  sampleSize?: number;
  seed?: number;
  /** Ask decisions of the changed permissions (default true); false = counts only (safe schema writes). */
  decisions?: boolean;
  /** The evaluation time (ms): rows expired at it are neither counted nor read (default: now, once per diff). */
  at?: number;
  /** The work budget of this diff (default DEFAULT_DIFF_BUDGET). */
  budget?: Partial<DiffBudget>;
  /** Names the request in a budget error (default `schema diff`). */
  requestName?: string;
}

/** Live rows a report's removals and type changes would orphan or break (0 when unmeasured). */
export function orphanedRows(report: SchemaDiffReport): number {
  let n = 0;
  for (const r of report.removed) n += (r.tuples ?? 0) + (r.attributes ?? 0);
  for (const c of report.attributeTypeChanges) n += c.mismatched ?? 0;
  return n;
}

/** The structural diff alone, with no data (the CLI without --database). */
export function structuralReport(
  from: SchemaDefinition,
  to: SchemaDefinition,
  opts: DiffOptions = {},
): SchemaDiffReport {
  const d = diffSchemas(from, to);
  return {
    removed: d.removed.map((r) => ({ ...r })),
    added: d.added,
    attributeTypeChanges: d.attributeTypeChanges.map((c) => ({ ...c })),
    permissions: d.affectedPermissions.map((p) => ({ ...p })),
    unchangedPermissions: d.unchangedPermissions,
    measured: false,
    sample: {
      size: opts.sampleSize || DEFAULT_DIFF_SAMPLE,
      seed: opts.seed ?? DIFF_SAMPLE_SEED,
      pairBudget: new DiffWork(opts.budget).budget.pairs,
      limitedByBudget: false,
    },
    work: { rows: 0, pairs: 0, turns: 0 },
  };
}

interface Scope {
  store: Store;
  tenantId: string;
  snap: Snap;
  /** The evaluation time of every read of the diff. */
  at: number;
  work: DiffWork;
}

/** Live tuples matching `filter` (and `keep`): one COUNT where the store has it (RowCounts), else paged. */
async function countTuples(s: Scope, filter: TupleFilter, keep?: (t: Tuple) => boolean): Promise<number> {
  if (keep === undefined && hasRowCounts(s.store))
    return s.store.countTuples(s.tenantId, s.snap, filter, s.at);
  let n = 0;
  let cursor: string | undefined;
  do {
    const page = await s.store.readTuples(s.tenantId, s.snap, filter, PAGE, cursor, s.at);
    s.work.readRows(page.items.length);
    n += keep === undefined ? page.items.length : page.items.filter(keep).length;
    cursor = page.cursor || undefined;
    await s.work.yieldTurn();
  } while (cursor !== undefined);
  return n;
}

async function eachAttribute(
  s: Scope,
  filter: AttributeFilter,
  visit: (a: Attribute) => void,
): Promise<void> {
  let cursor: string | undefined;
  do {
    const page = await s.store.readAttributes(s.tenantId, s.snap, filter, PAGE, cursor, s.at);
    s.work.readRows(page.items.length);
    for (const a of page.items) visit(a);
    cursor = page.cursor || undefined;
    await s.work.yieldTurn();
  } while (cursor !== undefined);
}

async function countAttributes(s: Scope, filter: AttributeFilter): Promise<number> {
  if (hasRowCounts(s.store)) return s.store.countAttributes(s.tenantId, s.snap, filter, s.at);
  let n = 0;
  await eachAttribute(s, filter, () => n++);
  return n;
}

/** The live rows a removal orphans: rows of the removed thing, and tuples naming it as their subject. */
async function removalImpact(s: Scope, r: SchemaRemoval): Promise<RemovalImpact> {
  switch (r.kind) {
    case "ENTITY": {
      const own = await countTuples(s, { entity: { type: r.entity } });
      // tuples of other entities with this subject type (its own are counted above)
      const asSubject = await countTuples(
        s,
        { subject: { type: r.entity } },
        (t) => t.entity.type !== r.entity,
      );
      const attributes = await countAttributes(s, { entity: { type: r.entity } });
      return { ...r, tuples: own + asSubject, attributes };
    }
    case "RELATION":
    case "PERMISSION": {
      const own =
        r.kind === "RELATION" ? await countTuples(s, { entity: { type: r.entity }, relation: r.name }) : 0;
      const asSubject = await countTuples(s, { subject: { type: r.entity, relation: r.name } });
      return { ...r, tuples: own + asSubject, attributes: 0 };
    }
    case "ATTRIBUTE":
      return {
        ...r,
        tuples: 0,
        attributes: await countAttributes(s, { entity: { type: r.entity }, attributes: [r.name] }),
      };
    case "RELATION_SUBJECT": {
      const [type, relation = ""] = (r.subject ?? "").split("#");
      const tuples = await countTuples(
        s,
        { entity: { type: r.entity }, relation: r.name, subject: { type, relation } },
        (t) => t.subject.relation === relation,
      );
      return { ...r, tuples, attributes: 0 };
    }
  }
}

async function typeChangeImpact(s: Scope, c: AttributeTypeChange): Promise<TypeChangeImpact> {
  let values = 0;
  let mismatched = 0;
  await eachAttribute(s, { entity: { type: c.entity }, attributes: [c.attribute] }, (a) => {
    values++;
    if (a.value.type !== c.to) mismatched++;
  });
  return { ...c, values, mismatched };
}

/** Relation names of `type` in either schema: what a walk along stored relationships may follow. */
function relationsOf(from: SchemaDefinition, to: SchemaDefinition, type: string): string[] {
  return [
    ...new Set([
      ...Object.keys(own(from.entities, type)?.relations ?? {}),
      ...Object.keys(own(to.entities, type)?.relations ?? {}),
    ]),
  ];
}

interface Pair {
  entity: Entity;
  subject: Subject;
}

/** Ids the walks of one hop read at most per store call. */
const WALK_IDS_PER_CALL = 1000;

/**
 * Walks from each start along stored relationships (a random tuple of the entity, then of its subject, ... at most
 * WALK_HOPS hops) to a subject of a wanted type it is related to: where grants are. All walks take each hop
 * together, one store call per WALK_IDS_PER_CALL entities; a tuple is picked from its entity's tuples in key order,
 * so the walk is the same on every store.
 */
async function walkToSubjects(
  s: Scope,
  from: SchemaDefinition,
  to: SchemaDefinition,
  starts: Entity[],
  wanted: Set<string>,
  rand: () => number,
): Promise<(Subject | undefined)[]> {
  const found: (Subject | undefined)[] = starts.map(() => undefined);
  const at: (Entity | undefined)[] = [...starts];
  for (let hop = 0; hop < WALK_HOPS; hop++) {
    const ids = new Map<string, Set<string>>();
    for (const e of at)
      if (e !== undefined) (ids.get(e.type) ?? ids.set(e.type, new Set()).get(e.type)!).add(e.id);
    if (ids.size === 0) break;
    const byEntity = new Map<string, Tuple[]>();
    for (const [type, set] of ids) {
      const relations = relationsOf(from, to, type);
      if (relations.length === 0) continue;
      const all = [...set];
      for (let i = 0; i < all.length; i += WALK_IDS_PER_CALL) {
        const entityIds = all.slice(i, i + WALK_IDS_PER_CALL);
        for (const t of await s.store.queryTuples(
          s.tenantId,
          s.snap,
          [{ entityType: type, entityIds, relations }],
          s.at,
        )) {
          const key = `${t.entity.type}\u0000${t.entity.id}`;
          (byEntity.get(key) ?? byEntity.set(key, []).get(key)!).push(t);
        }
        await s.work.yieldTurn();
      }
    }
    for (const list of byEntity.values()) {
      const keyed = list.map((t) => [tupleKey(t), t] as const);
      keyed.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
      list.splice(0, list.length, ...keyed.map(([, t]) => t));
    }
    for (let i = 0; i < at.length; i++) {
      const e = at[i];
      if (e === undefined) continue;
      const list = byEntity.get(`${e.type}\u0000${e.id}`);
      if (list === undefined) {
        at[i] = undefined;
        continue;
      }
      const next = list[Math.floor(rand() * list.length)]!.subject;
      at[i] = { type: next.type, id: next.id };
      if (wanted.has(next.type)) {
        found[i] = { type: next.type, id: next.id, relation: "" };
        if (rand() < 0.5) at[i] = undefined;
      }
    }
  }
  return found;
}

/** Stored ids per type, read once per diff. */
type IdCache = Map<string, string[]>;

async function idsOf(s: Scope, cache: IdCache, type: string): Promise<string[]> {
  let ids = cache.get(type);
  if (ids === undefined) {
    ids = await s.store.listObjectIds(s.tenantId, s.snap, type, s.at);
    cache.set(type, ids);
    await s.work.yieldTurn();
  }
  return ids;
}

/** The pairs to ask: all of them when there are at most `size`, else a seeded sample of `size`. */
async function pairsOf(
  s: Scope,
  from: SchemaDefinition,
  to: SchemaDefinition,
  entityType: string,
  subjectTypes: string[],
  size: number,
  rand: () => number,
  cache: IdCache,
): Promise<{ pairs: Pair[]; population: number; sampled: boolean }> {
  const entityIds = await idsOf(s, cache, entityType);
  const subjects: Subject[] = [];
  for (const type of subjectTypes) {
    for (const id of await idsOf(s, cache, type)) subjects.push({ type, id, relation: "" });
  }
  const population = entityIds.length * subjects.length;
  const pairs: Pair[] = [];
  if (population <= size) {
    for (const id of entityIds)
      for (const subject of subjects) pairs.push({ entity: { type: entityType, id }, subject });
    return { pairs, population, sampled: false };
  }
  const seen = new Set<string>();
  const add = (entity: Entity, subject: Subject) => {
    const key = `${entity.id}\u0000${subject.type}\u0000${subject.id}`;
    if (pairs.length >= size || seen.has(key)) return;
    seen.add(key);
    pairs.push({ entity, subject });
  };
  const wanted = new Set(subjectTypes);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  // Half along stored relationships (where grants are), half uniform (where a grant by attribute or rule, or its
  // absence, shows); rounds until the sample is full (repeats are dropped), at most four.
  for (let round = 0; round < 4 && pairs.length < size; round++) {
    const missing = size - pairs.length;
    const starts: Entity[] = [];
    for (let i = 0; i < Math.ceil(missing / 2); i++) starts.push({ type: entityType, id: pick(entityIds) });
    const related = await walkToSubjects(s, from, to, starts, wanted, rand);
    starts.forEach((entity, i) => {
      add(entity, related[i] ?? pick(subjects));
      add({ type: entityType, id: pick(entityIds) }, pick(subjects));
    });
  }
  return { pairs, population, sampled: true };
}

/** Stored entities of the type x stored subjects of the subject types. */
async function populationOf(
  s: Scope,
  cache: IdCache,
  entityType: string,
  subjectTypes: string[],
): Promise<number> {
  let subjects = 0;
  for (const type of subjectTypes) subjects += (await idsOf(s, cache, type)).length;
  return (await idsOf(s, cache, entityType)).length * subjects;
}

/** Decisions under one schema, in batches (engine errors count as DENIED, as in bulk check). */
async function decide(
  compiled: CompiledSchema,
  s: Scope,
  permission: string,
  pairs: Pair[],
): Promise<boolean[]> {
  const target: EvaluationTarget = {
    store: s.store,
    tenantId: s.tenantId,
    snap: s.snap,
    at: s.at,
    depth: DEPTH,
  };
  const out: boolean[] = [];
  for (let i = 0; i < pairs.length; i += CHECK_BATCH) {
    const batch = pairs
      .slice(i, i + CHECK_BATCH)
      .map((p) => ({ entity: p.entity, permission, subject: p.subject }));
    for (const r of await bulkCheck(compiled, target, batch)) out.push(r.can === "CHECK_RESULT_ALLOWED");
    await s.work.yieldTurn();
  }
  return out;
}

export interface DiffSide {
  definition: SchemaDefinition;
  compiled?: CompiledSchema;
}

/**
 * The diff from `from` (the schema in use) to `to`, measured on the tenant's live data at `snap`. The counts are
 * exact; decisions are asked for every stored (entity, subject) pair of a changed permission when there are at most
 * `sampleSize`, else for a seeded sample of that many (the report says which). The pairs of all permissions together
 * stay within the budget's `pairs` (a permission's sample shrinks, and the report says so); reading more than its
 * `rows` is refused. The work is cut into event-loop turns (schema-diff-work.ts).
 */
export async function measureSchemaDiff(
  store: Store,
  tenantId: string,
  snap: Snap,
  from: DiffSide,
  to: DiffSide,
  opts: DiffOptions = {},
): Promise<SchemaDiffReport> {
  const report = structuralReport(from.definition, to.definition, opts);
  const work = new DiffWork(opts.budget, opts.requestName);
  const s: Scope = { store, tenantId, snap, at: opts.at ?? Date.now(), work };
  const asking = opts.decisions !== false && report.permissions.length > 0;
  const removed: RemovalImpact[] = [];
  const typeChanges: TypeChangeImpact[] = [];
  const ids: IdCache = new Map();
  if (hasRowCounts(store)) {
    // COUNT statements: the database does the counting
    for (const r of report.removed) removed.push(await removalImpact(s, r));
    for (const c of report.attributeTypeChanges) typeChanges.push(await typeChangeImpact(s, c));
  } else if (report.removed.length > 0 || report.attributeTypeChanges.length > 0 || asking) {
    const idTypes = new Set<string>();
    if (asking)
      for (const p of report.permissions) {
        idTypes.add(p.entity);
        for (const t of p.subjectTypes) idTypes.add(t);
      }
    const scan = await scanRows(
      store,
      tenantId,
      snap,
      s.at,
      report.removed,
      report.attributeTypeChanges,
      idTypes,
      work,
    );
    for (const [i, r] of report.removed.entries()) removed.push({ ...r, ...scan.removed[i]! });
    for (const [i, c] of report.attributeTypeChanges.entries())
      typeChanges.push({ ...c, ...scan.typeChanges[i]! });
    for (const [type, list] of scan.ids) ids.set(type, list);
  }
  const permissions: PermissionImpact[] = [];
  let limitedByBudget = false;
  if (asking) {
    const oldCompiled = from.compiled ?? compileSchema(from.definition);
    const newCompiled = to.compiled ?? compileSchema(to.definition);
    const rand = seededRandom(report.sample.seed);
    // a store that reads from memory answers faster than the cache's bookkeeping; a SQL store repeats statements
    const inMemory = store.kind === "memory" || store instanceof ReplicaStore;
    const reads: Scope = inMemory ? s : { ...s, store: new ReadCache(store) };
    let remaining = work.budget.pairs;
    for (const [i, p] of report.permissions.entries()) {
      // the budget left, shared evenly by the permissions still to ask
      const size = Math.min(report.sample.size, Math.floor(remaining / (report.permissions.length - i)));
      if (size < report.sample.size) limitedByBudget = true;
      const { pairs, population, sampled } =
        size > 0
          ? await pairsOf(reads, from.definition, to.definition, p.entity, p.subjectTypes, size, rand, ids)
          : {
              pairs: [],
              population: await populationOf(reads, ids, p.entity, p.subjectTypes),
              sampled: true,
            };
      remaining -= pairs.length;
      work.pairs += pairs.length;
      const before = await decide(oldCompiled, reads, p.permission, pairs);
      const after = await decide(newCompiled, reads, p.permission, pairs);
      let allowedToDenied = 0;
      let deniedToAllowed = 0;
      const examples: DecisionFlip[] = [];
      pairs.forEach((pair, i) => {
        if (before[i] === after[i]) return;
        const shown = before[i] ? allowedToDenied++ : deniedToAllowed++;
        if (shown < EXAMPLES)
          examples.push({
            ...pair,
            from: before[i] ? "CHECK_RESULT_ALLOWED" : "CHECK_RESULT_DENIED",
            to: after[i] ? "CHECK_RESULT_ALLOWED" : "CHECK_RESULT_DENIED",
          });
      });
      permissions.push({
        ...p,
        pairs: population,
        checked: pairs.length,
        sampled: sampled || pairs.length < population,
        allowedToDenied,
        deniedToAllowed,
        examples,
      });
    }
  }
  return {
    ...report,
    removed,
    attributeTypeChanges: typeChanges,
    permissions: opts.decisions === false ? report.permissions : permissions,
    measured: true,
    sample: { ...report.sample, limitedByBudget },
    work: { rows: work.rows, pairs: work.pairs, turns: work.turns },
  };
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

/** `relation doc#owner`, `subject type team#member of relation doc#viewer`, `entity team`. */
export function removalName(r: SchemaRemoval): string {
  switch (r.kind) {
    case "ENTITY":
      return `entity ${r.entity}`;
    case "RELATION_SUBJECT":
      return `subject type ${r.subject} of relation ${r.entity}#${r.name}`;
    default:
      return `${r.kind.toLowerCase()} ${r.entity}#${r.name}`;
  }
}

/** The rows each removal orphans, `relation doc#owner (3 tuples)`, and the values of changed types. */
export function orphanList(report: SchemaDiffReport): string[] {
  const out: string[] = [];
  for (const r of report.removed) {
    const rows = [
      r.tuples ? plural(r.tuples, "tuple") : "",
      r.attributes ? plural(r.attributes, "attribute") : "",
    ].filter(Boolean);
    if (rows.length > 0) out.push(`${removalName(r)} (${rows.join(", ")})`);
  }
  for (const c of report.attributeTypeChanges) {
    if (c.mismatched)
      out.push(
        `attribute ${c.entity}#${c.attribute} ${c.from} -> ${c.to} (${plural(c.mismatched, "stored value")} no longer ${c.mismatched === 1 ? "fits" : "fit"})`,
      );
  }
  return out;
}

/** The error of a refused safe schema write: ERROR_CODE_VALIDATION, naming every orphan. */
export function schemaWriteRefusal(report: SchemaDiffReport): PembaError {
  return new PembaError(
    "ERROR_CODE_VALIDATION",
    `schema write would orphan live rows: ${orphanList(report).join("; ")}; delete or migrate them first (schema writes are "safe")`,
  );
}
