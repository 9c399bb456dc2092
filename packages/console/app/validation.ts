/**
 * The validation-file runner: a Permify validation YAML loaded and run in this page by @pemba/core's own runner
 * (loadShape + runScenarios, the code behind `pemba validate`), pass/fail per assertion, and coverage: which of
 * the schema's relations, attributes, permissions and rules the assertions exercised.
 */
import {
  type AssertionOutcome,
  EvaluationPool,
  explain,
  explainToWire,
  type LoadedShape,
  loadShape,
  parseAttributeString,
  parseEntityString,
  parseSubjectString,
  parseTupleString,
  type RunAbort,
  resolveDepth,
  runScenarios,
  type SchemaDefinition,
  type ShapeCheck,
  ValidationAbort,
} from "@pemba/core";
import { proofTouches } from "./proof.ts";

export interface CoverageItem {
  /** `relation doc#owner`, `attribute doc#public`, `permission doc#view`, `rule is_public`. */
  key: string;
  covered: boolean;
}

export interface RunnerResult {
  aborted?: RunAbort;
  problems: { line: number; key: string; message: string }[];
  assertions: AssertionOutcome[];
  passed: number;
  failed: number;
  coverage: CoverageItem[];
}

export function schemaElements(schema: SchemaDefinition): string[] {
  const keys: string[] = [];
  for (const [name, e] of Object.entries(schema.entities)) {
    for (const r of Object.keys(e.relations)) keys.push(`relation ${name}#${r}`);
    for (const a of Object.keys(e.attributes)) keys.push(`attribute ${name}#${a}`);
    for (const p of Object.keys(e.permissions)) keys.push(`permission ${name}#${p}`);
  }
  for (const r of Object.keys(schema.rules)) keys.push(`rule ${r}`);
  return keys;
}

/**
 * What a check's assertions exercised: the nodes of its proof (core's explain on the file's store, with the
 * check's context and depth). A check whose strings do not parse exercised nothing (the run reports it).
 */
async function checkTouches(loaded: LoadedShape, c: ShapeCheck, pool: EvaluationPool, into: Set<string>) {
  let entity: ReturnType<typeof parseEntityString>;
  let subject: ReturnType<typeof parseSubjectString>;
  let context: Parameters<typeof explain>[0]["context"];
  try {
    entity = parseEntityString(c.entity);
    subject = parseSubjectString(c.subject);
    context = {
      tuples: c.context.tuples.map((t) => parseTupleString(t.value)),
      attributes: c.context.attributes.map((a) => parseAttributeString(a.value)),
      data: c.context.data,
    };
  } catch {
    return;
  }
  const target = {
    schema: loaded.compiled,
    store: loaded.store,
    tenantId: loaded.tenantId,
    snap: loaded.snap,
    context,
    evaluations: pool,
  };
  for (const a of c.assertions) {
    into.add(`permission ${entity.type}#${a.permission}`);
    try {
      const answer = explainToWire(
        await explain(
          { ...target, depth: resolveDepth(c.depth) },
          { entity, permission: a.permission, subject },
        ),
      );
      proofTouches(answer.proof, into);
    } catch {
      // the assertion's own run reports the error
    }
  }
}

export async function runValidation(text: string): Promise<RunnerResult> {
  let loaded: LoadedShape;
  try {
    loaded = await loadShape(text);
  } catch (e) {
    if (e instanceof ValidationAbort) {
      return { aborted: e.abort, problems: [], assertions: [], passed: 0, failed: 0, coverage: [] };
    }
    throw e;
  }
  try {
    const report = await runScenarios(loaded);
    const touched = new Set<string>();
    const pool = new EvaluationPool();
    for (const scenario of loaded.shape.scenarios) {
      for (const c of scenario.checks) await checkTouches(loaded, c, pool, touched);
      for (const f of scenario.entityFilters) {
        for (const a of f.assertions) touched.add(`permission ${f.entityType}#${a.permission}`);
      }
      for (const f of scenario.subjectFilters) {
        const entity = safe(() => parseEntityString(f.entity));
        for (const a of f.assertions) if (entity) touched.add(`permission ${entity.type}#${a.permission}`);
      }
    }
    const coverage = schemaElements(loaded.schema).map((key) => ({ key, covered: touched.has(key) }));
    return {
      problems: report.problems.map((p) => ({ line: p.line, key: p.key, message: p.message })),
      assertions: report.assertions,
      passed: report.passed,
      failed: report.failed,
      coverage,
    };
  } finally {
    await loaded.store.close();
  }
}

function safe<T>(run: () => T): T | undefined {
  try {
    return run();
  } catch {
    return undefined;
  }
}
