/**
 * The AuthZEN Authorization API 1.0 (OpenID Foundation): evaluation, evaluations, the three searches and the
 * discovery document, for each tenant under `/v1/tenants/{tenant_id}`, and for one tenant at the root paths when
 * `authzenTenant` is given. Same pipeline as every route (authentication, tenant access, body limit); a request
 * must be `Content-Type: application/json`.
 */
import type { z } from "@hono/zod-openapi";
import {
  AccessDecisionSchema,
  AccessEvaluationRequestSchema,
  AccessEvaluationsRequestSchema,
  AccessEvaluationsResponseSchema,
  ActionSearchRequestSchema,
  ActionSearchResponseSchema,
  AuthzenConfigurationSchema,
  authzenConfiguration,
  EntitySearchResponseSchema,
  evaluate,
  evaluateMany,
  parseAuthzen,
  ResourceSearchRequestSchema,
  readEvaluationRequest,
  SubjectSearchRequestSchema,
  searchActions,
  searchResources,
  searchSubjects,
} from "../../authzen/index.ts";
import { PembaError } from "../../errors.ts";
import { type Answer, type ApiRequest, jsonAnswer, jsonTextAnswer } from "../pipeline.ts";
import { parseJsonText } from "../request-body.ts";
import type { RouteDef, RouteHandler } from "../route.ts";
import { type ApiRoute, AUTHZEN_ROOT_ROUTES, AUTHZEN_ROUTES } from "../route-table.ts";
import type { AppDeps } from "./deps.ts";

/** The body of an AuthZEN request: JSON by its Content-Type (400 otherwise), an object, under the body limit. */
async function authzenBody(req: ApiRequest, maxBytes: number): Promise<Record<string, unknown>> {
  const type = req.header("content-type");
  const media = type?.split(";", 1)[0]?.trim().toLowerCase();
  if (media !== "application/json") {
    throw new PembaError(
      "ERROR_CODE_VALIDATION",
      `Content-Type must be application/json${type === undefined ? "" : `, not ${type}`}`,
      { grpcCode: 3 },
    );
  }
  const text = await req.text(maxBytes);
  if (text.trim() === "") {
    throw new PembaError("ERROR_CODE_VALIDATION", "the request body is empty", { grpcCode: 3 });
  }
  return parseJsonText(text);
}

/** A route's reader: the AuthZEN body (`authzenBody`) validated with `schema`, errors worded as AuthZEN's. */
function authzenReader<S extends z.ZodType>(message: string, schema: S) {
  return async (req: ApiRequest, maxBytes: number): Promise<z.output<S>> =>
    parseAuthzen(message, schema, await authzenBody(req, maxBytes));
}

/** The decision point's base URL: the request's origin (X-Forwarded-Proto names the scheme behind a proxy). */
function baseUrl(req: ApiRequest, prefix: string): string {
  const url = req.url === undefined ? undefined : new URL(req.url);
  const proto = req.header("x-forwarded-proto")?.split(",", 1)[0]?.trim();
  const scheme = proto || url?.protocol.slice(0, -1) || "http";
  const host = req.header("host") ?? url?.host ?? "localhost";
  return `${scheme}://${host}${prefix}`;
}

const TAG = "AuthZEN";

/** Registers the AuthZEN endpoints of every tenant, and at the root for `authzenTenant` when given. */
export function registerAuthzenRoutes({ routes, service, limits }: AppDeps, authzenTenant?: string): void {
  const maxPage = limits.maxLookupPageSize;
  const decision = (d: { decision: boolean; context?: unknown }): Answer =>
    d.context === undefined ? jsonTextAnswer(`{"decision":${d.decision}}`) : jsonAnswer(d);

  const register = (
    set: typeof AUTHZEN_ROOT_ROUTES,
    prefixOf: (tenantId: string) => string,
    tenant?: string,
  ) => {
    const endpointOf = (route: ApiRoute) =>
      tenant === undefined ? route.endpoint : { ...route.endpoint, tenant };
    const add = <Body>(
      def: RouteDef<Body> & { read: NonNullable<RouteDef<Body>["read"]> },
      handler: RouteHandler<Body>,
    ) => routes.add(def, handler, endpointOf(def.route));
    add(
      {
        route: set.evaluation,
        summary: "AuthZEN access evaluation",
        description:
          "Can the subject do the action on the resource? The action is a permission of the resource's type; " +
          "properties become contextual attributes; `context` is `context.data`. A deny is `decision: false`.",
        tag: TAG,
        body: AccessEvaluationRequestSchema,
        read: async (req, maxBytes) => readEvaluationRequest(await authzenBody(req, maxBytes)),
        response: AccessDecisionSchema,
      },
      async ({ body, tenantId, obs }) => {
        const d = evaluate(service, tenantId, body, obs);
        return decision(d instanceof Promise ? await d : d);
      },
    );
    add(
      {
        route: set.evaluations,
        summary: "AuthZEN access evaluations",
        description:
          `Up to ${limits.maxBulkCheckItems} evaluations in request order; top-level subject, action, resource ` +
          "and context are each item's defaults. `options.evaluations_semantic`: execute_all (default), " +
          "deny_on_first_deny, permit_on_first_permit (the evaluations after the first deny/permit are not run).",
        tag: TAG,
        body: AccessEvaluationsRequestSchema,
        read: authzenReader("AccessEvaluationsRequest", AccessEvaluationsRequestSchema),
        response: AccessEvaluationsResponseSchema,
      },
      async ({ body, tenantId, obs }) => {
        return jsonAnswer(await evaluateMany(service, tenantId, body, limits.maxBulkCheckItems, obs));
      },
    );
    add(
      {
        route: set.searchSubject,
        summary: "AuthZEN subject search",
        description: "Subjects of `subject.type` that may do the action on the resource (lookup-subject).",
        tag: TAG,
        body: SubjectSearchRequestSchema,
        read: authzenReader("SubjectSearchRequest", SubjectSearchRequestSchema),
        response: EntitySearchResponseSchema,
      },
      async ({ body, tenantId, obs }) => {
        return jsonAnswer(await searchSubjects(service, tenantId, body, maxPage, obs));
      },
    );
    add(
      {
        route: set.searchResource,
        summary: "AuthZEN resource search",
        description: "Resources of `resource.type` the subject may do the action on (lookup-entity).",
        tag: TAG,
        body: ResourceSearchRequestSchema,
        read: authzenReader("ResourceSearchRequest", ResourceSearchRequestSchema),
        response: EntitySearchResponseSchema,
      },
      async ({ body, tenantId, obs }) => {
        return jsonAnswer(await searchResources(service, tenantId, body, maxPage, obs));
      },
    );
    add(
      {
        route: set.searchAction,
        summary: "AuthZEN action search",
        description:
          "The permissions of the resource's type the subject has on the resource (subject-permission).",
        tag: TAG,
        body: ActionSearchRequestSchema,
        read: authzenReader("ActionSearchRequest", ActionSearchRequestSchema),
        response: ActionSearchResponseSchema,
      },
      async ({ body, tenantId, obs }) => {
        return jsonAnswer(await searchActions(service, tenantId, body, maxPage, obs));
      },
    );
    const configuration = (route: ApiRoute) =>
      routes.add(
        {
          route,
          summary: "AuthZEN decision point metadata",
          tag: TAG,
          response: AuthzenConfigurationSchema,
        },
        ({ req, tenantId }) => jsonAnswer(authzenConfiguration(baseUrl(req, prefixOf(tenantId)))),
        endpointOf(route),
      );
    configuration(set.configuration);
    return configuration;
  };

  const tenantPrefix = (tenantId: string) => `/v1/tenants/${encodeURIComponent(tenantId)}`;
  const configuration = register(AUTHZEN_ROUTES, tenantPrefix);
  configuration(AUTHZEN_ROUTES.configurationWellKnown);
  if (authzenTenant !== undefined) register(AUTHZEN_ROOT_ROUTES, () => "", authzenTenant);
}
