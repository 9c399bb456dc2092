/** Permission endpoints: check, bulk check, expand, lookup entity (+ stream), lookup subject, subject permission. */

import type { CheckOutcome } from "../../engine/types.ts";
import { PembaError } from "../../errors.ts";
import type { Context } from "../../model.ts";
import type { PembaService, PermissionMetadata } from "../../service/index.ts";
import type { MaybePromise } from "../../store/store.ts";
import { scanCheckBody } from "../check-body-scanner.ts";
import { parseCheckFast } from "../check-fast-path.ts";
import { contextFromWire, expandToWire } from "../convert.ts";
import { JSON_HEADERS, NDJSON_HEADERS } from "../error-response.ts";
import type { Limits } from "../limits.ts";
import { assertBodyWithinLimit, parseJsonText, readBodyText, readJsonBody } from "../request-body.ts";
import type { WireContext } from "../wire/common.ts";
import {
  PermissionBulkCheckResponseSchema,
  PermissionCheckRequestSchema,
  PermissionCheckResponseSchema,
  PermissionExpandRequestSchema,
  PermissionExpandResponseSchema,
  PermissionLookupEntityRequestSchema,
  PermissionLookupEntityResponseSchema,
  PermissionLookupEntityStreamResponseSchema,
  PermissionLookupSubjectRequestSchema,
  PermissionLookupSubjectResponseSchema,
  PermissionSubjectPermissionRequestSchema,
  PermissionSubjectPermissionResponseSchema,
  permissionBulkCheckRequestSchema,
} from "../wire/permission.ts";
import { parseWire } from "../wire/pgv.ts";
import type { AppDeps } from "./deps.ts";
import { pageSize } from "./deps.ts";

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

/** A parsed check body -> the decision: the hand-written fast path first, zod (and PGV messages) otherwise. */
export function checkFromBody(
  service: PembaService,
  limits: Limits,
  tenantId: string,
  body: Record<string, unknown>,
): MaybePromise<CheckOutcome> {
  const fast = parseCheckFast(body);
  if (fast !== undefined) return service.check(tenantId, fast.meta, fast.query);
  const r = parseWire(PermissionCheckRequestSchema, body);
  return service.check(
    tenantId,
    meta(r.metadata),
    { entity: r.entity, permission: r.permission, subject: r.subject },
    contextWithin(limits, r.context),
  );
}

/**
 * A check body's text -> the decision: the scanner for the common body (no JSON.parse), the parsed-body path for
 * anything else.
 */
export function checkFromText(
  service: PembaService,
  limits: Limits,
  tenantId: string,
  text: string,
): MaybePromise<CheckOutcome> {
  assertBodyWithinLimit(text, limits.maxBodyBytes);
  const scanned = scanCheckBody(text);
  if (scanned !== undefined) return service.check(tenantId, scanned.meta, scanned.query);
  return checkFromBody(service, limits, tenantId, parseJsonText(text));
}

export const checkResponseText = (outcome: CheckOutcome): string =>
  `{"can":"${outcome.can}","metadata":{"check_count":${outcome.checkCount}}}`;

export const checkResponse = (outcome: CheckOutcome): Response =>
  new Response(checkResponseText(outcome), { headers: JSON_HEADERS });

export function registerPermissionRoutes({ routes, service, limits }: AppDeps): void {
  const context = (c: WireContext | undefined) => contextWithin(limits, c);
  const base = "/v1/tenants/{tenant_id}/permissions";

  routes.add(
    {
      method: "post",
      path: `${base}/check`,
      operationId: "permissions.check",
      summary: "check api",
      tag: "Permission",
      requestMessage: "PermissionCheckRequest",
      body: PermissionCheckRequestSchema,
      response: PermissionCheckResponseSchema,
    },
    async (c, tenantId) => {
      const outcome = await checkFromText(
        service,
        limits,
        tenantId,
        await readBodyText(c, limits.maxBodyBytes),
      );
      c.set("decision", outcome.can);
      return checkResponse(outcome);
    },
  );

  const bulkSchema = permissionBulkCheckRequestSchema(limits.maxBulkCheckItems);
  routes.add(
    {
      method: "post",
      path: `${base}/bulk-check`,
      operationId: "permissions.bulk-check",
      summary: "bulk check api",
      description: `Check multiple permissions in a single request. Maximum ${limits.maxBulkCheckItems} items.`,
      tag: "Permission",
      requestMessage: "PermissionBulkCheckRequest",
      body: bulkSchema,
      response: PermissionBulkCheckResponseSchema,
    },
    async (c, tenantId) => {
      const r = parseWire(bulkSchema, await readJsonBody(c, limits.maxBodyBytes));
      const outcomes = await service.bulkCheck(
        tenantId,
        meta(r.metadata),
        r.items.map((i) => ({ entity: i.entity, permission: i.permission, subject: i.subject })),
        context(r.context),
      );
      return c.json({
        results: outcomes.map((o) => ({ can: o.can, metadata: { check_count: o.checkCount } })),
      });
    },
  );

  routes.add(
    {
      method: "post",
      path: `${base}/expand`,
      operationId: "permissions.expand",
      summary: "expand api",
      tag: "Permission",
      requestMessage: "PermissionExpandRequest",
      body: PermissionExpandRequestSchema,
      response: PermissionExpandResponseSchema,
    },
    async (c, tenantId) => {
      const r = parseWire(PermissionExpandRequestSchema, await readJsonBody(c, limits.maxBodyBytes));
      const tree = await service.expand(
        tenantId,
        { schemaVersion: r.metadata.schema_version, snapToken: r.metadata.snap_token },
        r.entity,
        r.permission,
        context(r.context),
      );
      return c.json({ tree: expandToWire(tree) });
    },
  );

  const lookupEntity = async (
    c: Parameters<Parameters<typeof routes.add>[1]>[0],
    tenantId: string,
    stream: boolean,
  ) => {
    const r = parseWire(PermissionLookupEntityRequestSchema, await readJsonBody(c, limits.maxBodyBytes));
    const size = pageSize(r.page_size, 1000, limits.maxLookupPageSize);
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
    );
  };

  routes.add(
    {
      method: "post",
      path: `${base}/lookup-entity`,
      operationId: "permissions.lookupEntity",
      summary: "lookup entity",
      tag: "Permission",
      requestMessage: "PermissionLookupEntityRequest",
      body: PermissionLookupEntityRequestSchema,
      response: PermissionLookupEntityResponseSchema,
    },
    async (c, tenantId) => {
      const result = await lookupEntity(c, tenantId, false);
      return c.json({ entity_ids: result.entityIds, continuous_token: result.continuousToken });
    },
  );

  routes.add(
    {
      method: "post",
      path: `${base}/lookup-entity-stream`,
      operationId: "permissions.lookupEntityStream",
      summary: "lookup entity stream",
      description:
        'Newline-delimited JSON, one `{"result":{"entity_id","continuous_token"}}` per entity; every line carries ' +
        "the page's continuous token. `scope` is ignored (as in Permify).",
      tag: "Permission",
      requestMessage: "PermissionLookupEntityRequest",
      body: PermissionLookupEntityRequestSchema,
      response: PermissionLookupEntityStreamResponseSchema,
      stream: true,
    },
    async (c, tenantId) => {
      const result = await lookupEntity(c, tenantId, true);
      let text = "";
      for (const id of result.entityIds) {
        text += `${JSON.stringify({ result: { entity_id: id, continuous_token: result.continuousToken } })}\n`;
      }
      return new Response(text, { headers: NDJSON_HEADERS });
    },
  );

  routes.add(
    {
      method: "post",
      path: `${base}/lookup-subject`,
      operationId: "permissions.lookupSubject",
      summary: "lookup-subject",
      tag: "Permission",
      requestMessage: "PermissionLookupSubjectRequest",
      body: PermissionLookupSubjectRequestSchema,
      response: PermissionLookupSubjectResponseSchema,
    },
    async (c, tenantId) => {
      const r = parseWire(PermissionLookupSubjectRequestSchema, await readJsonBody(c, limits.maxBodyBytes));
      const result = await service.lookupSubject(
        tenantId,
        meta(r.metadata),
        {
          entity: r.entity,
          permission: r.permission,
          subjectReference: r.subject_reference,
          pageSize: pageSize(r.page_size, 1000, limits.maxLookupPageSize),
          continuousToken: r.continuous_token || undefined,
        },
        context(r.context),
      );
      return c.json({ subject_ids: result.subjectIds, continuous_token: result.continuousToken });
    },
  );

  routes.add(
    {
      method: "post",
      path: `${base}/subject-permission`,
      operationId: "permissions.subjectPermission",
      summary: "subject permission",
      tag: "Permission",
      requestMessage: "PermissionSubjectPermissionRequest",
      body: PermissionSubjectPermissionRequestSchema,
      response: PermissionSubjectPermissionResponseSchema,
    },
    async (c, tenantId) => {
      const r = parseWire(
        PermissionSubjectPermissionRequestSchema,
        await readJsonBody(c, limits.maxBodyBytes),
      );
      const results = await service.subjectPermission(
        tenantId,
        meta(r.metadata),
        r.entity,
        r.subject,
        r.metadata.only_permission,
        context(r.context),
      );
      return c.json({ results });
    },
  );
}
