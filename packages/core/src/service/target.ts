/** Where the service evaluates a permission request, and what its observed runs (observed.ts) ask of it. */
import type { CheckQuery, EvaluationTarget } from "../engine/index.ts";
import type { Context } from "../model.ts";
import type { Snap, Store } from "../store/store.ts";
import type { ResolvedSchema } from "./schema-registry.ts";

/** Metadata of a permission request after wire parsing; "" = head. */
export interface PermissionMetadata {
  schemaVersion: string;
  snapToken: string;
  depth: number;
}

/** Where the service evaluates a question: the engine's target, over the service's whole store (traced as a Store). */
export interface ServiceTarget extends EvaluationTarget {
  store: Store;
}

/** A request's compiled schema and where it is evaluated, and the snap token of a snap (PembaService). */
export interface TargetResolver {
  target(
    tenantId: string,
    meta: PermissionMetadata,
    context?: Context,
  ): Promise<{ schema: ResolvedSchema; target: ServiceTarget }>;
  snapTokenOf(tenantId: string, snap: Snap): string;
}

/** A question `checkWith` asks: built from the compiled schema (AuthZEN's mapping). */
export interface Question {
  query: CheckQuery;
  context?: Context;
  /** The context's attributes win over the store's (AuthZEN properties). */
  contextualAttributesFirst?: boolean;
}
