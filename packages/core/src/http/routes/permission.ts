/** Permission endpoints: check, bulk check, expand, lookup entity (+ stream), lookup subject, subject permission. */

import type { z } from "@hono/zod-openapi";
import type { CheckOutcome, CheckQuery } from "../../engine/types.ts";
import { PembaError } from "../../errors.ts";
import type { Context } from "../../model.ts";
import type { RequestObservation } from "../../observe/observation.ts";
import type { PermissionMetadata } from "../../service/index.ts";
import type { WireContext } from "../../wire/common.ts";
import {
  PermissionBulkCheckResponseSchema,
  PermissionCheckRequestSchema,
  PermissionCheckResponseSchema,
  PermissionExpandRequestSchema,
  PermissionExpandResponseSchema,
  PermissionExplainRequestSchema,
  PermissionExplainResponseSchema,
  PermissionLookupEntityRequestSchema,
  PermissionLookupEntityResponseSchema,
  PermissionLookupEntityStreamResponseSchema,
  PermissionLookupSubjectRequestSchema,
  PermissionLookupSubjectResponseSchema,
  PermissionSubjectPermissionRequestSchema,
  PermissionSubjectPermissionResponseSchema,
  permissionBulkCheckRequestSchema,
} from "../../wire/permission.ts";
import { parseWire } from "../../wire/pgv.ts";
import { scanCheckBody } from "../check-body-scanner.ts";
import {
  contextFromWire,
  DEFAULT_EXPLAIN_BYTES,
  DEFAULT_EXPLAIN_NODES,
  expandToWire,
  explainToWire,
} from "../convert.ts";
import type { Limits } from "../limits.ts";
import { type Answer, type ApiRequest, jsonAnswer, jsonTextAnswer, ndjsonAnswer } from "../pipeline.ts";
import { parseJsonText } from "../request-body.ts";
import { ROUTES } from "../route-table.ts";
import type { AppDeps } from "./deps.ts";
import { pageSize } from "./deps.ts";

type PermissionLookupEntityRequest = z.output<typeof PermissionLookupEntityRequestSchema>;

const meta = (m: { schema_version: string; snap_token: string; depth: number }): PermissionMetadata => ({
  schemaVersion: m.schema_version,
  snapToken: m.snap_token,
  depth: m.depth,
});

function contextWithin(limits: Limits, c: WireContext | undefined): Context | undefined {
  if (c !== undefined && c.tuples.length + c.attributes.length > limits.maxContextData) {
    throw new PembaError("ERROR_CODE_MAX_DATA_PER_WRITE_EXCEEDED");
  }
  return contextFromWire(c);
}

/** A check (or explain) request's parts, as the check route's reader and the native gRPC check give them. */
export interface CheckRequest {
  meta: PermissionMetadata;
  query: CheckQuery;
  context?: Context;
}

/**
 * A check request's body text -> its parts. zod's wire schema is the one definition of a valid body; the body
 * scanner is a fast path for the common body that gives what zod gives (property-tested) or leaves it to zod.
 */
function checkRequestFromText(limits: Limits, text: string): CheckRequest {
  const scanned = scanCheckBody(text);
  if (scanned !== undefined) return scanned;
  const r = parseWire(PermissionCheckRequestSchema, parseJsonText(text));
  return {
    meta: meta(r.metadata),
    query: { entity: r.entity, permission: r.permission, subject: r.subject },
    context: contextWithin(limits, r.context),
  };
}

/** The check answer's JSON (a decision and a count: ASCII, no escaping needed). */
export const checkAnswer = (outcome: CheckOutcome): Answer => ({
  status: 200,
  headers: ["content-type", "application/json"],
  body: `{"can":"${outcome.can}","metadata":{"check_count":${outcome.checkCount}}}`,
  decision: outcome.can,
  checkCount: outcome.checkCount,
});

/** Registers the permission endpoints. */
export function registerPermissionRoutes({ routes, service, limits }: AppDeps): void {
  const context = (c: WireContext | undefined) => contextWithin(limits, c);
  const readCheck = async (req: ApiRequest, maxBytes: number) =>
    checkRequestFromText(limits, await req.text(maxBytes));

  routes.add(
    {
      route: ROUTES.check,
      summary: "check api",
      tag: "Permission",
      body: PermissionCheckRequestSchema,
      read: readCheck,
      response: PermissionCheckResponseSchema,
    },
    ({ body, tenantId, obs }) => {
      const outcome = service.check(tenantId, body.meta, body.query, body.context, obs);
      return outcome instanceof Promise ? outcome.then(checkAnswer) : checkAnswer(outcome);
    },
  );

  const bulkSchema = permissionBulkCheckRequestSchema(limits.maxBulkCheckItems);
  routes.add(
    {
      route: ROUTES.bulkCheck,
      summary: "bulk check api",
      description: `Check multiple permissions in a single request. Maximum ${limits.maxBulkCheckItems} items.`,
      tag: "Permission",
      body: bulkSchema,
      response: PermissionBulkCheckResponseSchema,
    },
    async ({ body: r, tenantId, obs }) => {
      const outcomes = await service.bulkCheck(
        tenantId,
        meta(r.metadata),
        r.items.map((i) => ({ entity: i.entity, permission: i.permission, subject: i.subject })),
        context(r.context),
        obs,
      );
      return jsonAnswer({
        results: outcomes.map((o) => ({ can: o.can, metadata: { check_count: o.checkCount } })),
      });
    },
  );

  routes.add(
    {
      route: ROUTES.expand,
      summary: "expand api",
      tag: "Permission",
      body: PermissionExpandRequestSchema,
      response: PermissionExpandResponseSchema,
    },
    async ({ body: r, tenantId }) => {
      const tree = await service.expand(
        tenantId,
        { schemaVersion: r.metadata.schema_version, snapToken: r.metadata.snap_token },
        r.entity,
        r.permission,
        context(r.context),
      );
      return jsonAnswer({ tree: expandToWire(tree) });
    },
  );

  routes.add(
    {
      route: ROUTES.explain,
      summary: "explain api (Pemba extension)",
      description:
        "Takes the check request and answers the decision with its proof: for ALLOWED the path that granted it, " +
        "hop by hop, with the tuple, attribute or rule behind each hop; for DENIED every branch tried and why it " +
        `failed. At most ${DEFAULT_EXPLAIN_NODES} proof nodes and about ${DEFAULT_EXPLAIN_BYTES} bytes of JSON; past ` +
        'that the rest of a node\'s children are one "cut" node (`omitted`: how many) and truncated is true.',
      tag: "Permission",
      body: PermissionExplainRequestSchema,
      // exactly the check request: read as check reads it (PermissionExplainRequestSchema is the check's schema)
      read: readCheck,
      response: PermissionExplainResponseSchema,
    },
    async ({ body: { meta, query, context }, tenantId, obs }) => {
      const out = explainToWire(await service.explain(tenantId, meta, query, context, obs));
      return jsonTextAnswer(JSON.stringify(out), out.can);
    },
  );

  const lookupEntity = async (
    r: PermissionLookupEntityRequest,
    tenantId: string,
    stream: boolean,
    obs: RequestObservation | undefined,
  ) => {
    const size = pageSize(r.page_size, "lookup", limits.maxLookupPageSize);
    const scope: Record<string, string[]> = {};
    for (const [type, ids] of Object.entries(r.scope)) scope[type] = ids.data;
    return service.lookupEntity(
      tenantId,
      meta(r.metadata),
      {
        entityType: r.entity_type,
        permission: r.permission,
        subject: r.subject,
        // Permify's stream endpoint does not pass `scope` to the engine.
        scope: stream || Object.keys(scope).length === 0 ? undefined : scope,
        pageSize: size,
        continuousToken: r.continuous_token || undefined,
      },
      context(r.context),
      obs,
    );
  };

  routes.add(
    {
      route: ROUTES.lookupEntity,
      summary: "lookup entity",
      tag: "Permission",
      body: PermissionLookupEntityRequestSchema,
      response: PermissionLookupEntityResponseSchema,
    },
    async ({ body, tenantId, obs }) => {
      const result = await lookupEntity(body, tenantId, false, obs);
      return jsonAnswer({ entity_ids: result.entityIds, continuous_token: result.continuousToken });
    },
  );

  routes.add(
    {
      route: ROUTES.lookupEntityStream,
      summary: "lookup entity stream",
      description:
        'Newline-delimited JSON, one `{"result":{"entity_id","continuous_token"}}` per entity; every line carries ' +
        "the page's continuous token. `scope` is ignored (as in Permify).",
      tag: "Permission",
      body: PermissionLookupEntityRequestSchema,
      response: PermissionLookupEntityStreamResponseSchema,
    },
    async ({ body, tenantId, obs }) => {
      const result = await lookupEntity(body, tenantId, true, obs);
      let text = "";
      for (const id of result.entityIds) {
        text += `${JSON.stringify({ result: { entity_id: id, continuous_token: result.continuousToken } })}\n`;
      }
      return ndjsonAnswer(text);
    },
  );

  routes.add(
    {
      route: ROUTES.lookupSubject,
      summary: "lookup-subject",
      tag: "Permission",
      body: PermissionLookupSubjectRequestSchema,
      response: PermissionLookupSubjectResponseSchema,
    },
    async ({ body: r, tenantId, obs }) => {
      const result = await service.lookupSubject(
        tenantId,
        meta(r.metadata),
        {
          entity: r.entity,
          permission: r.permission,
          subjectReference: r.subject_reference,
          pageSize: pageSize(r.page_size, "lookup", limits.maxLookupPageSize),
          continuousToken: r.continuous_token || undefined,
        },
        context(r.context),
        obs,
      );
      return jsonAnswer({ subject_ids: result.subjectIds, continuous_token: result.continuousToken });
    },
  );

  routes.add(
    {
      route: ROUTES.subjectPermission,
      summary: "subject permission",
      tag: "Permission",
      body: PermissionSubjectPermissionRequestSchema,
      response: PermissionSubjectPermissionResponseSchema,
    },
    async ({ body: r, tenantId, obs }) => {
      const results = await service.subjectPermission(
        tenantId,
        meta(r.metadata),
        r.entity,
        r.subject,
        r.metadata.only_permission,
        context(r.context),
        obs,
      );
      return jsonAnswer({ results });
    },
  );
}
