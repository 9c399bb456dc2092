/**
 * The validation-file runner: a Permify validation YAML loaded and run in this page by @pemba/core's own runner
 * (loadShape + runScenarios, the code behind `pemba validate`), pass/fail per assertion, and coverage: which of
 * the schema's relations, attributes, permissions and rules the assertions exercised.
 */
import {
  type AssertionOutcome,
  type LoadedShape,
  loadShape,
  parseEntityString,
  type RunAbort,
  runScenarios,
  type SchemaDefinition,
  ValidationAbort,
} from "@pemba/core";
import type { ExplainAnswer } from "./proof.ts";
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

/** Explains one check on the file's store: supplied by the page once the engine has explain. */
export type ExplainOnFile = (
  loaded: LoadedShape,
  query: { entity: string; permission: string; subject: string },
) => Promise<ExplainAnswer | undefined>;

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

export async function runValidation(text: string, explain?: ExplainOnFile): Promise<RunnerResult> {
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
    for (const scenario of loaded.shape.scenarios) {
      for (const c of scenario.checks) {
        for (const a of c.assertions) {
          const entity = safe(() => parseEntityString(c.entity));
          if (entity) touched.add(`permission ${entity.type}#${a.permission}`);
          if (explain === undefined) continue;
          const answer = await explain(loaded, {
            entity: c.entity,
            permission: a.permission,
            subject: c.subject,
          });
          if (answer) proofTouches(answer.proof, touched);
        }
      }
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
