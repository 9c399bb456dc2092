/**
 * The engine's public surface: what the HTTP app, the validation runner and the SDK-facing layers call.
 * Schema version and snap token are already resolved by the caller (the service layer); the engine works on one
 * compiled schema at one snapshot of one tenant.
 */
import type { CheckResult, Context, Entity, Subject } from "../model.ts";
import type { Snap, Store } from "../store/store.ts";
import type { EvaluationPool } from "./evaluation/pool.ts";

export interface EvaluationTarget {
  store: Store;
  tenantId: string;
  snap: Snap;
  /**
   * The evaluation time (ms since the epoch): rows whose `expiresAt` is at or before it are absent. ONE value for
   * the whole request, so the answer is a function of (snap, at). Default: the clock when the evaluation starts.
   */
  at?: number;
  /** Permify's metadata.depth (callers validate >= 3). */
  depth: number;
  context?: Context;
  /**
   * A contextual attribute wins over a stored one in rule arguments too (AuthZEN: the properties a request sends
   * are what it asks about). Default: Permify's order, stored first in rule arguments.
   */
  contextualAttributesFirst?: boolean;
  /**
   * The caller's pool, kept across requests: a check reuses the evaluation of the last one that answered
   * synchronously, and a store that answered a batch synchronously is read directly. Without one, every
   * evaluation is new and batches its first reads.
   */
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
