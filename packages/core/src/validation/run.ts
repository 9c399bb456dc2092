/**
 * `permify validate` (pkg/cmd/validate.go) over Pemba's engine: every assertion of every scenario becomes one
 * engine call on the file's own store. Assertions run in file order (Permify iterates a Go map: random order).
 */
import { check, EvaluationPool, lookupEntity, lookupSubject } from "../engine/index.ts";
import type { EvaluationTarget } from "../engine/types.ts";
import type { Attribute, Context, Entity, Subject, Tuple } from "../model.ts";
import {
  parseAttributeString,
  parseEntityString,
  parseSubjectString,
  parseTupleString,
} from "../schema/index.ts";
import type { LoadedShape, ValidateOptions } from "./load.ts";
import { errorText, loadShape, ValidationAbort } from "./load.ts";
import type { AssertionOutcome, QueryKind, RunProblem, ValidationReport } from "./report.ts";
import type { ShapeCheck, ShapeContext, ShapeEntityFilter, ShapeSubjectFilter } from "./shape.ts";

export const DEFAULT_DEPTH = 100;
/** Lookups are paged through so that a file's expectations always see the full answer. */
const LOOKUP_PAGE_SIZE = 1000;

export const subjectText = (s: Subject): string => `${s.type}:${s.id}${s.relation ? `#${s.relation}` : ""}`;
export const entityText = (e: Entity): string => `${e.type}:${e.id}`;

/** `type` or `type#relation` (Permify's tuple.RelationReference). */
export function parseSubjectReference(text: string): { type: string; relation: string } {
  const [type = "", relation = ""] = text.split("#", 2);
  return { type, relation };
}

/** 0/absent -> 100; anything below 3 is refused like Permify's request validation. */
export function resolveDepth(fileDepth: number, override?: number): number {
  const depth = override ?? (fileDepth === 0 ? DEFAULT_DEPTH : fileDepth);
  if (depth < 3) throw new Error("depth must be greater than or equal to 3");
  return depth;
}

/** Contextual tuples/attributes are parsed but, as in Permify, not validated against the schema. */
function buildContext(c: ShapeContext): Context {
  return {
    tuples: c.tuples.map((t): Tuple => parseTupleString(t.value)),
    attributes: c.attributes.map((a): Attribute => parseAttributeString(a.value)),
    data: c.data,
  };
}

const sameIds = (a: string[], b: string[]): boolean => {
  if (a.length !== b.length) return false;
  const x = [...a].sort();
  const y = [...b].sort();
  return x.every((v, i) => v === y[i]);
};

class ScenarioRunner {
  readonly assertions: AssertionOutcome[] = [];
  readonly problems: RunProblem[] = [];
  private readonly loaded: LoadedShape;
  private readonly evaluations = new EvaluationPool();
  private readonly opts: ValidateOptions;

  constructor(loaded: LoadedShape, opts: ValidateOptions) {
    this.loaded = loaded;
    this.opts = opts;
  }

  /** The target of one query; records a problem and returns undefined when its context does not parse. */
  private target(
    context: ShapeContext,
    key: string,
    line: number,
  ): Omit<EvaluationTarget, "depth"> | undefined {
    try {
      const ctx = buildContext(context);
      return {
        store: this.loaded.store,
        tenantId: this.loaded.tenantId,
        snap: this.loaded.snap,
        context: ctx,
        evaluations: this.evaluations,
      };
    } catch (e) {
      this.problems.push({ stage: "scenarios", key, line, message: errorText(e) });
      return undefined;
    }
  }

  private parsed<T>(parse: () => T, key: string, line: number): T | undefined {
    try {
      return parse();
    } catch (e) {
      this.problems.push({ stage: "scenarios", key, line, message: errorText(e) });
      return undefined;
    }
  }

  private async assert(
    kind: QueryKind,
    scenario: string,
    query: string,
    line: number,
    expected: boolean | string[],
    run: () => Promise<boolean | string[]>,
  ): Promise<void> {
    let actual: boolean | string[];
    try {
      actual = await run();
    } catch (e) {
      this.assertions.push({ kind, scenario, query, line, expected, error: errorText(e), pass: false });
      return;
    }
    const pass = typeof expected === "boolean" ? actual === expected : sameIds(expected, actual as string[]);
    this.assertions.push({ kind, scenario, query, line, expected, actual, pass });
  }

  async check(scenario: string, c: ShapeCheck): Promise<void> {
    const entity = this.parsed(() => parseEntityString(c.entity), c.entity, c.line);
    const subject = this.parsed(() => parseSubjectString(c.subject), c.subject, c.line);
    if (!entity || !subject) return;
    const base = this.target(c.context, `${subjectText(subject)} ${entityText(entity)}`, c.line);
    if (!base) return;
    for (const a of c.assertions) {
      const query = `${subjectText(subject)} ${a.permission} ${entityText(entity)}`;
      await this.assert("check", scenario, query, a.line, a.expected, async () => {
        const depth = resolveDepth(c.depth, this.opts.depthOverride);
        const outcome = await check(
          this.loaded.compiled,
          { ...base, depth },
          { entity, permission: a.permission, subject },
        );
        return outcome.can === "CHECK_RESULT_ALLOWED";
      });
    }
  }

  async entityFilter(scenario: string, f: ShapeEntityFilter): Promise<void> {
    const subject = this.parsed(() => parseSubjectString(f.subject), f.subject, f.line);
    if (!subject) return;
    const base = this.target(f.context, `${subjectText(subject)} ${f.entityType}`, f.line);
    if (!base) return;
    for (const a of f.assertions) {
      const query = `${subjectText(subject)} ${a.permission} ${f.entityType}`;
      await this.assert("entity_filter", scenario, query, a.line, a.expected, async () => {
        const target = { ...base, depth: resolveDepth(f.depth, this.opts.depthOverride) };
        const ids: string[] = [];
        let continuousToken: string | undefined;
        do {
          const page = await lookupEntity(this.loaded.compiled, target, {
            entityType: f.entityType,
            permission: a.permission,
            subject,
            pageSize: LOOKUP_PAGE_SIZE,
            continuousToken,
          });
          ids.push(...page.entityIds);
          continuousToken = page.continuousToken || undefined;
        } while (continuousToken);
        return ids;
      });
    }
  }

  async subjectFilter(scenario: string, f: ShapeSubjectFilter): Promise<void> {
    const entity = this.parsed(() => parseEntityString(f.entity), f.entity, f.line);
    if (!entity) return;
    const base = this.target(f.context, `${entityText(entity)} ${f.subjectReference}`, f.line);
    if (!base) return;
    const subjectReference = parseSubjectReference(f.subjectReference);
    for (const a of f.assertions) {
      const query = `${entityText(entity)} ${a.permission} ${f.subjectReference}`;
      await this.assert("subject_filter", scenario, query, a.line, a.expected, async () => {
        const target = { ...base, depth: resolveDepth(f.depth, this.opts.depthOverride) };
        const ids: string[] = [];
        let continuousToken: string | undefined;
        do {
          const page = await lookupSubject(this.loaded.compiled, target, {
            entity,
            permission: a.permission,
            subjectReference,
            pageSize: LOOKUP_PAGE_SIZE,
            continuousToken,
          });
          ids.push(...page.subjectIds);
          continuousToken = page.continuousToken || undefined;
        } while (continuousToken);
        return ids;
      });
    }
  }
}

/** Runs every scenario of an already loaded file. */
export async function runScenarios(
  loaded: LoadedShape,
  opts: ValidateOptions = {},
): Promise<ValidationReport> {
  const runner = new ScenarioRunner(loaded, opts);
  for (const scenario of loaded.shape.scenarios) {
    for (const c of scenario.checks) await runner.check(scenario.name, c);
    for (const f of scenario.entityFilters) await runner.entityFilter(scenario.name, f);
    for (const f of scenario.subjectFilters) await runner.subjectFilter(scenario.name, f);
  }
  const problems = [...loaded.problems, ...runner.problems];
  const passed = runner.assertions.filter((a) => a.pass).length;
  const failed = runner.assertions.length - passed;
  return {
    ok: failed === 0 && problems.length === 0,
    problems,
    assertions: runner.assertions,
    passed,
    failed,
  };
}

/**
 * Runs a validation file the way `permify validate` does, in a fresh in-memory store (tenant t1). Never throws
 * for a bad file: a file-format problem, a schema error or a relationship/attribute that violates the schema
 * yields a report with `aborted` set.
 */
export async function validateFile(text: string, opts: ValidateOptions = {}): Promise<ValidationReport> {
  let loaded: LoadedShape;
  try {
    loaded = await loadShape(text, opts);
  } catch (e) {
    if (e instanceof ValidationAbort) {
      return { ok: false, aborted: e.abort, problems: [], assertions: [], passed: 0, failed: 0 };
    }
    throw e;
  }
  try {
    return await runScenarios(loaded, opts);
  } finally {
    await loaded.store.close();
  }
}
