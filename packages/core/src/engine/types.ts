/**
 * The engine's public surface: what the HTTP app, the validation runner and the SDK-facing layers call.
 * Schema version and snap token are already resolved by the caller (the service layer); the engine works on one
 * compiled schema at one snapshot of one tenant.
 */
import type { CheckResult, Entity, Subject } from "../model.ts";
import type { EvaluationInput } from "./evaluation/evaluation.ts";
import type { EvaluationPool } from "./evaluation/pool.ts";

export type { EvaluationInput, SynchronousStores } from "./evaluation/evaluation.ts";

/**
 * A question's target (EvaluationInput: the reads, the snap, the time, the context) and the caller's pool, kept
 * across requests: a check reuses the evaluation of the last one that answered synchronously, and a store that
 * answered a batch synchronously is read directly. Without one, every evaluation is new and batches its first reads.
 */
export interface EvaluationTarget extends EvaluationInput {
  evaluations?: EvaluationPool;
}

export interface CheckQuery {
  entity: Entity;
  permission: string;
  subject: Subject;
}

export interface CheckOutcome {
  can: CheckResult;
  checkCount: number;
}

export interface LookupEntityQuery {
  entityType: string;
  permission: string;
  subject: Subject;
  /** Restrict candidate ids per entity type. */
  scope?: Record<string, string[]>;
  pageSize: number;
  continuousToken?: string;
}

export interface LookupSubjectQuery {
  entity: Entity;
  permission: string;
  subjectReference: { type: string; relation: string };
  pageSize: number;
  continuousToken?: string;
}

export type ExpandNode = {
  entity: Entity;
  permission: string;
  arguments: unknown[];
} & (
  | {
      expand: {
        operation: "OPERATION_UNION" | "OPERATION_INTERSECTION" | "OPERATION_EXCLUSION";
        children: ExpandNode[];
      };
    }
  | {
      leaf:
        | { subjects: { subjects: Subject[] } }
        | { value: unknown }
        | { values: { values: Record<string, unknown> } };
    }
);
