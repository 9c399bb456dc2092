/**
 * The Search APIs over the engine: a subject search is lookup-subject, a resource search lookup-entity, an action
 * search the subject-permission question over the resource type's permissions. A page token is opaque to the
 * client: Pemba's continuous token (or the action list's offset), the snap token of the first page (every page
 * reads the same snapshot) and a hash of the request, so a token sent with another request is refused.
 */
import type { CompiledSchema } from "../compile/index.ts";
import { decideAllOn, Evaluation, lookupEntity, lookupSubject } from "../engine/index.ts";
import type { EvaluationTarget } from "../engine/types.ts";
import { PembaError } from "../errors.ts";
import type { PembaService, PermissionMetadata } from "../service/index.ts";
import { AUTHZEN_DEPTH } from "./evaluate.ts";
import { decodeId } from "./ids.ts";
import { type AuthzenQuestion, type MappedQuestion, mapQuestion } from "./mapping.ts";

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
async function searchTarget(
  service: PembaService,
  tenantId: string,
  token: PageToken | undefined,
): Promise<{ schema: CompiledSchema; target: EvaluationTarget; snapToken: string }> {
  const meta: PermissionMetadata = { schemaVersion: "", snapToken: token?.s ?? "", depth: AUTHZEN_DEPTH };
  return service.evaluationTarget(tenantId, meta);
}

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
const withContext = (target: EvaluationTarget, m: MappedQuestion): EvaluationTarget => ({
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
): Promise<SearchAnswer<{ type: string; id: string }>> {
  const hash = requestHash("subject", { ...req, subject: { type: req.subject.type } });
  const token = readToken(req.page?.token, hash);
  const { schema, target, snapToken } = await searchTarget(service, tenantId, token);
  const m = mapped(schema, { ...req, subject: { type: req.subject.type, id: "subject" } });
  if (m === undefined) return answer([], undefined);
  const out = await lookupSubject(schema, withContext(target, m), {
    entity: m.query.entity,
    permission: m.query.permission,
    subjectReference: { type: req.subject.type, relation: "" },
    pageSize: pageSizeOf(req.page?.limit, maxPage),
    continuousToken: typeof token?.c === "string" ? token.c : undefined,
  });
  const results = out.subjectIds.map((id) => ({ type: req.subject.type, id: decodeId(id) }));
  return answer(results, out.continuousToken ? { c: out.continuousToken, s: snapToken, h: hash } : undefined);
}

/** Resources of `resource.type` the subject may do the action on (the resource's id, if sent, is ignored). */
export async function searchResources(
  service: PembaService,
  tenantId: string,
  req: Omit<AuthzenQuestion, "resource"> & { resource: { type: string }; page?: SearchPage },
  maxPage: number,
): Promise<SearchAnswer<{ type: string; id: string }>> {
  const hash = requestHash("resource", { ...req, resource: { type: req.resource.type } });
  const token = readToken(req.page?.token, hash);
  const { schema, target, snapToken } = await searchTarget(service, tenantId, token);
  const m = mapped(schema, { ...req, resource: { type: req.resource.type, id: "resource" } });
  if (m === undefined) return answer([], undefined);
  const out = await lookupEntity(schema, withContext(target, m), {
    entityType: req.resource.type,
    permission: m.query.permission,
    subject: m.query.subject,
    pageSize: pageSizeOf(req.page?.limit, maxPage),
    continuousToken: typeof token?.c === "string" ? token.c : undefined,
  });
  const results = out.entityIds.map((id) => ({ type: req.resource.type, id: decodeId(id) }));
  return answer(results, out.continuousToken ? { c: out.continuousToken, s: snapToken, h: hash } : undefined);
}

/** The permissions of the resource's type the subject has on it, by name. */
export async function searchActions(
  service: PembaService,
  tenantId: string,
  req: Omit<AuthzenQuestion, "action"> & { page?: SearchPage },
  maxPage: number,
): Promise<SearchAnswer<{ name: string }>> {
  const hash = requestHash("action", req);
  const token = readToken(req.page?.token, hash);
  const { schema, target, snapToken } = await searchTarget(service, tenantId, token);
  const def = Object.hasOwn(schema.definition.entities, req.resource.type)
    ? schema.definition.entities[req.resource.type]
    : undefined;
  const names = def === undefined ? [] : Object.keys(def.permissions).sort();
  if (names.length === 0) return answer([], undefined);
  const m = mapped(schema, { ...req, action: { name: names[0]! } });
  if (m === undefined) return answer([], undefined);
  const evaluation = new Evaluation(schema, withContext(target, m), m.query.subject);
  const decided = await decideAllOn(
    evaluation,
    names.map((permission) => ({ ...m.query, permission })),
    target.depth,
  );
  const allowed = names.filter((_, i) => decided[i]!.can === "CHECK_RESULT_ALLOWED");
  const from = typeof token?.c === "number" ? token.c : 0;
  const size = pageSizeOf(req.page?.limit, maxPage);
  const results = allowed.slice(from, from + size).map((name) => ({ name }));
  const next = from + size < allowed.length ? { c: from + size, s: snapToken, h: hash } : undefined;
  return answer(results, next);
}
