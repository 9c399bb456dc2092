/**
 * The AuthZEN Authorization API 1.0 request and response shapes (zod; documented in the OpenAPI document). Unknown
 * fields are ignored, as the spec asks. A missing or mistyped required field is a 400, named by its path.
 */
import { z } from "@hono/zod-openapi";
import { PembaError } from "../errors.ts";

const properties = z
  .record(z.string(), z.unknown())
  .optional()
  .openapi({ description: "Attributes of the entity (typed by the schema's attributes of the same name)" });

export const AuthzenSubjectSchema = z
  .object({ type: z.string(), id: z.string(), properties })
  .openapi("AuthzenSubject");
export const AuthzenResourceSchema = z
  .object({ type: z.string(), id: z.string(), properties })
  .openapi("AuthzenResource");
export const AuthzenActionSchema = z.object({ name: z.string(), properties }).openapi("AuthzenAction");
const context = z
  .record(z.string(), z.unknown())
  .optional()
  .openapi({ description: "The environment of the request: `context.data` for rules" });

/** The searched-for entity: its `type`; an `id`, if sent, is ignored. */
const searchedEntity = z.object({ type: z.string(), id: z.string().optional(), properties });

export const AccessEvaluationRequestSchema = z
  .object({
    subject: AuthzenSubjectSchema,
    action: AuthzenActionSchema,
    resource: AuthzenResourceSchema,
    context,
  })
  .openapi("AccessEvaluationRequest");

export const EVALUATIONS_SEMANTICS = ["execute_all", "deny_on_first_deny", "permit_on_first_permit"] as const;
export type EvaluationsSemantic = (typeof EVALUATIONS_SEMANTICS)[number];

/**
 * Top-level entities are defaults of each item; an item's own entity replaces the default whole. An item's fields
 * are checked when it is evaluated: a broken item is `decision: false` with an error, not a 400.
 */
export const AccessEvaluationsRequestSchema = z
  .object({
    subject: AuthzenSubjectSchema.optional(),
    action: AuthzenActionSchema.optional(),
    resource: AuthzenResourceSchema.optional(),
    context,
    evaluations: z
      .array(
        z.object({
          subject: z.unknown().optional(),
          action: z.unknown().optional(),
          resource: z.unknown().optional(),
          context: z.unknown().optional(),
        }),
      )
      .optional(),
    options: z.object({ evaluations_semantic: z.enum(EVALUATIONS_SEMANTICS).optional() }).optional(),
  })
  .openapi("AccessEvaluationsRequest");

const page = z
  .object({
    token: z.string().optional(),
    limit: z.number().int().nonnegative().optional(),
  })
  .optional()
  .openapi({ description: "`token`: a previous answer's `next_token`; `limit`: results per page at most" });

export const SubjectSearchRequestSchema = z
  .object({
    subject: searchedEntity,
    action: AuthzenActionSchema,
    resource: AuthzenResourceSchema,
    context,
    page,
  })
  .openapi("SubjectSearchRequest");

export const ResourceSearchRequestSchema = z
  .object({
    subject: AuthzenSubjectSchema,
    action: AuthzenActionSchema,
    resource: searchedEntity,
    context,
    page,
  })
  .openapi("ResourceSearchRequest");

export const ActionSearchRequestSchema = z
  .object({ subject: AuthzenSubjectSchema, resource: AuthzenResourceSchema, context, page })
  .openapi("ActionSearchRequest");

export const AccessDecisionSchema = z
  .object({ decision: z.boolean(), context: z.record(z.string(), z.unknown()).optional() })
  .openapi("AccessDecision");

export const AccessEvaluationsResponseSchema = z
  .object({ decision: z.boolean().optional(), evaluations: z.array(AccessDecisionSchema).optional() })
  .openapi("AccessEvaluationsResponse");

const pageAnswer = z.object({
  next_token: z.string(),
  count: z.number().int().optional(),
});

export const EntitySearchResponseSchema = z
  .object({ page: pageAnswer.optional(), results: z.array(z.object({ type: z.string(), id: z.string() })) })
  .openapi("EntitySearchResponse");

export const ActionSearchResponseSchema = z
  .object({ page: pageAnswer.optional(), results: z.array(z.object({ name: z.string() })) })
  .openapi("ActionSearchResponse");

export const AuthzenConfigurationSchema = z
  .object({
    policy_decision_point: z.string(),
    access_evaluation_endpoint: z.string(),
    access_evaluations_endpoint: z.string(),
    search_subject_endpoint: z.string(),
    search_resource_endpoint: z.string(),
    search_action_endpoint: z.string(),
  })
  .openapi("AuthzenConfiguration");

export type AuthzenSubject = z.output<typeof AuthzenSubjectSchema>;
export type AuthzenResource = z.output<typeof AuthzenResourceSchema>;
export type AuthzenAction = z.output<typeof AuthzenActionSchema>;
export type AccessEvaluationRequest = z.output<typeof AccessEvaluationRequestSchema>;
export type AccessEvaluationsRequest = z.output<typeof AccessEvaluationsRequestSchema>;
export type AccessDecision = z.output<typeof AccessDecisionSchema>;

/** `body` as `schema` says, or ERROR_CODE_VALIDATION (a 400) naming the first wrong field by its path. */
export function parseAuthzen<T extends z.ZodType>(message: string, schema: T, body: unknown): z.output<T> {
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  throw new PembaError("ERROR_CODE_VALIDATION", `invalid ${message}: ${issueText(result.error.issues[0])}`, {
    grpcCode: 3,
  });
}

/** One zod issue as `subject.id: required string` / `action.name: expected string`. */
export function issueText(issue: z.core.$ZodIssue | undefined): string {
  if (issue === undefined) return "invalid";
  const path = issue.path.map(String).join(".");
  const missing = issue.code === "invalid_type" && issue.message.includes("received undefined");
  const what = missing ? `required ${issue.expected}` : issue.message;
  return path === "" ? what : `${path}: ${what}`;
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
const isEntity = (v: unknown): v is { type: string; id: string; properties?: unknown } =>
  isRecord(v) &&
  typeof v.type === "string" &&
  typeof v.id === "string" &&
  (v.properties === undefined || isRecord(v.properties));
const entityOut = (v: { type: string; id: string; properties?: unknown }) =>
  v.properties === undefined
    ? { type: v.type, id: v.id }
    : { type: v.type, id: v.id, properties: v.properties as Record<string, unknown> };

/**
 * An Access Evaluation request: the common body read field by field (what zod's schema gives for it: the known
 * fields, unknown ones dropped); any other body goes to zod, which names what is wrong.
 */
export function readEvaluationRequest(body: Record<string, unknown>): AccessEvaluationRequest {
  const { subject, action, resource, context } = body;
  if (
    isEntity(subject) &&
    isEntity(resource) &&
    isRecord(action) &&
    typeof action.name === "string" &&
    (action.properties === undefined || isRecord(action.properties)) &&
    (context === undefined || isRecord(context))
  ) {
    const out: AccessEvaluationRequest = {
      subject: entityOut(subject),
      action:
        action.properties === undefined
          ? { name: action.name }
          : { name: action.name, properties: action.properties },
      resource: entityOut(resource),
    };
    if (context !== undefined) out.context = context;
    return out;
  }
  return parseAuthzen("AccessEvaluationRequest", AccessEvaluationRequestSchema, body);
}
