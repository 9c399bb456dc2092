/**
 * The check endpoint's fast path: a hand-written validation of the common body (no context, no arguments) that
 * accepts exactly what the zod schema accepts. Anything unusual (or invalid) returns undefined and goes through
 * zod, which also produces the PGV error message.
 */
import type { CheckQuery } from "../engine/types.ts";
import type { PermissionMetadata } from "../service/index.ts";
import { idRegex, nameRegex } from "./wire/common.ts";

export interface FastCheckRequest {
  meta: PermissionMetadata;
  query: CheckQuery;
}

const isName = (v: unknown): v is string => typeof v === "string" && v.length <= 64 && nameRegex.test(v);
const isId = (v: unknown): v is string => typeof v === "string" && v.length <= 128 && idRegex.test(v);
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null;

/** A valid check depth: an int32 (Permify's type) of at least 3. */
export const isCheckDepth = (depth: unknown): depth is number =>
  typeof depth === "number" && Number.isInteger(depth) && depth >= 3 && depth <= 2147483647;

export function parseCheckFast(body: Record<string, unknown>): FastCheckRequest | undefined {
  const m = body.metadata;
  const e = body.entity;
  const s = body.subject;
  const permission = body.permission;
  if (!isObject(m) || !isObject(e) || !isObject(s)) return undefined;
  const depth = m.depth;
  if (!isCheckDepth(depth)) return undefined;
  const schemaVersion = m.schema_version ?? "";
  const snapToken = m.snap_token ?? "";
  if (typeof schemaVersion !== "string" || typeof snapToken !== "string") return undefined;
  if (!isName(e.type) || !isId(e.id) || !isName(permission) || !isName(s.type) || !isId(s.id))
    return undefined;
  const relation = s.relation ?? "";
  if (relation !== "" && !isName(relation)) return undefined;
  if (body.context !== undefined && body.context !== null) return undefined;
  const args = body.arguments;
  if (args !== undefined && args !== null && !(Array.isArray(args) && args.length === 0)) return undefined;
  return {
    meta: { schemaVersion, snapToken, depth },
    query: {
      entity: { type: e.type, id: e.id },
      permission,
      subject: { type: s.type, id: s.id, relation: relation as string },
    },
  };
}
