/**
 * The Search APIs over the engine: a subject search is lookup-subject, a resource search lookup-entity, an action
 * search the subject-permission question over the resource type's permissions. A page token is opaque to the
 * client: Pemba's continuous token (or the action list's offset), the snap token of the first page (every page
 * reads the same snapshot) and a hash of the request, so a token sent with another request is refused.
 */
import type { CompiledSchema } from "../compile/index.ts";
import { decideAllOn, Evaluation, lookupEntity, lookupSubject } from "../engine/index.ts";
import { PembaError } from "../errors.ts";
import type { RequestObservation } from "../observe/observation.ts";
import type { PembaService, PermissionMetadata, ServiceTarget } from "../service/index.ts";
import { entityText, lookupRecord, questionRecord, subjectText } from "../service/observed.ts";
import { AUTHZEN_DEPTH } from "./evaluate.ts";
import { decodeId } from "./ids.ts";
import { type AuthzenQuestion, type MappedQuestion, mapQuestion } from "./mapping.ts";
import { decidedAt, inEvaluation, type ResolvedTarget, resolveObserved } from "./observed.ts";

export interface SearchPage {
  token?: string;
  limit?: number;
}

export interface SearchAnswer<R> {
  page: { next_token: string; count: number };
  results: R[];
}

interface PageToken {
  /** Pemba's continuous token (entity and subject searches) or the next offset (action search). */
  c: string | number;
  /** The snap token every page reads at. */
  s: string;
  /** The request's hash (without the token). */
  h: string;
}

function fnv1a(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0).toString(16);
}

const requestHash = (kind: string, req: Record<string, unknown> & { page?: SearchPage }): string =>
  fnv1a(`${kind}${JSON.stringify({ ...req, page: { ...req.page, token: undefined } })}`);

const invalidToken = () =>
  new PembaError("ERROR_CODE_INVALID_CONTINUOUS_TOKEN", "page.token: not a token of this search", {
    grpcCode: 3,
  });

function readToken(token: string | undefined, hash: string): PageToken | undefined {
  if (token === undefined || token === "") return undefined;
  let parsed: PageToken;
  try {
    parsed = JSON.parse(atob(token.replace(/-/g, "+").replace(/_/g, "/")));
  } catch {
    throw invalidToken();
  }
  if (parsed?.h !== hash || typeof parsed.s !== "string") throw invalidToken();
  return parsed;
}

const writeToken = (t: PageToken): string =>
  btoa(JSON.stringify(t)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");

/** Where every page of a search reads: the first page's head, later pages at the token's snap. */
function searchTarget(
  service: PembaService,
  tenantId: string,
  token: PageToken | undefined,
  obs: RequestObservation | undefined,
): Promise<ResolvedTarget> {
  const meta: PermissionMetadata = { schemaVersion: "", snapToken: token?.s ?? "", depth: AUTHZEN_DEPTH };
  return resolveObserved(service, tenantId, meta, obs);
}

const searchAttributes = (operation: string, permission: string, entityType: string) => ({
  "pemba.operation": operation,
  "pemba.permission": permission,
  "pemba.entity.type": entityType,
});

/** The page size of a `limit`: absent or 0 = the default page, never more than the lookup maximum. */
const pageSizeOf = (limit: number | undefined, max: number) =>
  Math.min(limit === undefined || limit === 0 ? 1000 : limit, max);

/** A mapped question, or undefined when the schema does not have its types (an empty result); a 400 for bad data. */
function mapped(schema: CompiledSchema, q: AuthzenQuestion): MappedQuestion | undefined {
  const m = mapQuestion(schema, q);
  if (!("refusal" in m)) return m;
  if (m.refusal.status === 404) return undefined;
  throw new PembaError("ERROR_CODE_VALIDATION", m.refusal.message, { grpcCode: 3 });
}

/** The search's target: the request's contextual data, its properties first (as an evaluation's). */
const withContext = (target: ServiceTarget, m: MappedQuestion): ServiceTarget => ({
  ...target,
  context: m.context,
  contextualAttributesFirst: true,
});

const answer = <R>(results: R[], next: PageToken | undefined): SearchAnswer<R> => ({
  page: { next_token: next === undefined ? "" : writeToken(next), count: results.length },
  results,
});

/** Subjects of `subject.type` that may do the action on the resource (the subject's id, if sent, is ignored). */
export async function searchSubjects(
  service: PembaService,
  tenantId: string,
  req: Omit<AuthzenQuestion, "subject"> & { subject: { type: string }; page?: SearchPage },
  maxPage: number,
  obs?: RequestObservation,
): Promise<SearchAnswer<{ type: string; id: string }>> {
  const hash = requestHash("subject", { ...req, subject: { type: req.subject.type } });
  const token = readToken(req.page?.token, hash);
  const resolved = await searchTarget(service, tenantId, token, obs);
  const { schema, snapToken } = resolved;
  const m = mapped(schema, { ...req, subject: { type: req.subject.type, id: "subject" } });
  if (m === undefined) return answer([], undefined);
  const attributes = searchAttributes("authzen_subject_search", m.query.permission, m.query.entity.type);
  const out = await inEvaluation(obs, withContext(resolved.target, m), attributes, async (target) =>
    lookupSubject(schema, target, {
      entity: m.query.entity,
      permission: m.query.permission,
      subjectReference: { type: req.subject.type, relation: "" },
      pageSize: pageSizeOf(req.page?.limit, maxPage),
      continuousToken: typeof token?.c === "string" ? token.c : undefined,
    }),
  );
  const results = out.subjectIds.map((id) => ({ type: req.subject.type, id: decodeId(id) }));
  const fields = {
    subject: req.subject.type,
    permission: m.query.permission,
    entity: entityText(m.query.entity),
  };
  lookupRecord(obs, "authzen_subject_search", decidedAt(resolved), fields, out.subjectIds, m.context);
  return answer(results, out.continuousToken ? { c: out.continuousToken, s: snapToken, h: hash } : undefined);
}

/** Resources of `resource.type` the subject may do the action on (the resource's id, if sent, is ignored). */
export async function searchResources(
  service: PembaService,
  tenantId: string,
  req: Omit<AuthzenQuestion, "resource"> & { resource: { type: string }; page?: SearchPage },
  maxPage: number,
  obs?: RequestObservation,
): Promise<SearchAnswer<{ type: string; id: string }>> {
  const hash = requestHash("resource", { ...req, resource: { type: req.resource.type } });
  const token = readToken(req.page?.token, hash);
  const resolved = await searchTarget(service, tenantId, token, obs);
  const { schema, snapToken } = resolved;
  const m = mapped(schema, { ...req, resource: { type: req.resource.type, id: "resource" } });
  if (m === undefined) return answer([], undefined);
  const attributes = searchAttributes("authzen_resource_search", m.query.permission, req.resource.type);
  const out = await inEvaluation(obs, withContext(resolved.target, m), attributes, async (target) =>
    lookupEntity(schema, target, {
      entityType: req.resource.type,
      permission: m.query.permission,
      subject: m.query.subject,
      pageSize: pageSizeOf(req.page?.limit, maxPage),
      continuousToken: typeof token?.c === "string" ? token.c : undefined,
    }),
  );
  const results = out.entityIds.map((id) => ({ type: req.resource.type, id: decodeId(id) }));
  const fields = {
    subject: subjectText(m.query.subject),
    permission: m.query.permission,
    entity: req.resource.type,
  };
  lookupRecord(obs, "authzen_resource_search", decidedAt(resolved), fields, out.entityIds, m.context);
  return answer(results, out.continuousToken ? { c: out.continuousToken, s: snapToken, h: hash } : undefined);
}

/** The permissions of the resource's type the subject has on it, by name. */
export async function searchActions(
  service: PembaService,
  tenantId: string,
  req: Omit<AuthzenQuestion, "action"> & { page?: SearchPage },
  maxPage: number,
  obs?: RequestObservation,
): Promise<SearchAnswer<{ name: string }>> {
  const hash = requestHash("action", req);
  const token = readToken(req.page?.token, hash);
  const resolved = await searchTarget(service, tenantId, token, obs);
  const { schema, snapToken } = resolved;
  const def = Object.hasOwn(schema.definition.entities, req.resource.type)
    ? schema.definition.entities[req.resource.type]
    : undefined;
  const names = def === undefined ? [] : Object.keys(def.permissions).sort();
  if (names.length === 0) return answer([], undefined);
  const m = mapped(schema, { ...req, action: { name: names[0]! } });
  if (m === undefined) return answer([], undefined);
  const queries = names.map((permission) => ({ ...m.query, permission }));
  const attributes = { "pemba.operation": "authzen_action_search", "pemba.entity.type": req.resource.type };
  const decided = await inEvaluation(obs, withContext(resolved.target, m), attributes, async (target) =>
    decideAllOn(new Evaluation(schema, target, m.query.subject), queries, target.depth),
  );
  if (obs?.decisions !== undefined) {
    const latency = obs.latencyMs();
    decided.forEach((d, i) => {
      const record = questionRecord(
        "authzen_action_search",
        decidedAt(resolved),
        queries[i]!,
        d.can,
        d.checkCount,
        m.context,
      );
      obs.decided(record, latency);
    });
  }
  const allowed = names.filter((_, i) => decided[i]!.can === "CHECK_RESULT_ALLOWED");
  const from = typeof token?.c === "number" ? token.c : 0;
  const size = pageSizeOf(req.page?.limit, maxPage);
  const results = allowed.slice(from, from + size).map((name) => ({ name }));
  const next = from + size < allowed.length ? { c: from + size, s: snapToken, h: hash } : undefined;
  return answer(results, next);
}
