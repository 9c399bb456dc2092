/** Input checks every driver runs before it writes anything, so a bad request never leaves partial data. */
import { PembaError } from "../errors.ts";
import type { Attribute, AttributeValue, Tuple } from "../model.ts";
import type { WriteRequest } from "./store.ts";

const invalid = (what: string): PembaError => new PembaError("ERROR_CODE_VALIDATION", `invalid ${what}`);

function requireName(value: unknown, what: string): void {
  if (typeof value !== "string" || value === "") throw invalid(what);
}

function validateExpiry(expiresAt: number | undefined, what: string): void {
  if (expiresAt !== undefined && !Number.isSafeInteger(expiresAt)) throw invalid(`${what} expires_at`);
}

export function validateTuple(t: Tuple): void {
  if (!t?.entity || !t.subject) throw invalid("tuple");
  requireName(t.entity.type, "tuple entity type");
  requireName(t.entity.id, "tuple entity id");
  requireName(t.relation, "tuple relation");
  requireName(t.subject.type, "tuple subject type");
  requireName(t.subject.id, "tuple subject id");
  if (typeof t.subject.relation !== "string") throw invalid("tuple subject relation");
  validateExpiry(t.expiresAt, "tuple");
}

const INT32_MIN = -2147483648;
const INT32_MAX = 2147483647;

function scalarOk(base: string, v: unknown): boolean {
  switch (base) {
    case "BOOLEAN":
      return typeof v === "boolean";
    case "STRING":
      return typeof v === "string";
    case "INTEGER":
      return typeof v === "number" && Number.isInteger(v) && v >= INT32_MIN && v <= INT32_MAX;
    case "DOUBLE":
      return typeof v === "number" && Number.isFinite(v);
    default:
      return false;
  }
}

export function validateAttributeValue(value: AttributeValue): void {
  if (!value || typeof value.type !== "string" || !value.type.startsWith("ATTRIBUTE_TYPE_")) {
    throw invalid("attribute value type");
  }
  const name = value.type.slice("ATTRIBUTE_TYPE_".length);
  if (name.endsWith("_ARRAY")) {
    const base = name.slice(0, -"_ARRAY".length);
    if (!Array.isArray(value.data) || !value.data.every((v) => scalarOk(base, v))) {
      throw invalid(`attribute value for ${value.type}`);
    }
  } else if (!scalarOk(name, value.data)) {
    throw invalid(`attribute value for ${value.type}`);
  }
}

export function validateAttribute(a: Attribute): void {
  if (!a?.entity) throw invalid("attribute");
  requireName(a.entity.type, "attribute entity type");
  requireName(a.entity.id, "attribute entity id");
  requireName(a.attribute, "attribute name");
  validateAttributeValue(a.value);
  validateExpiry(a.expiresAt, "attribute");
}

/** Throws PembaError ERROR_CODE_VALIDATION for the first malformed item. */
export function validateWriteRequest(req: WriteRequest): void {
  if (req.expireUpTo !== undefined && !Number.isSafeInteger(req.expireUpTo))
    throw invalid("expiry sweep time");
  for (const t of req.tuples ?? []) validateTuple(t);
  for (const t of req.deleteTuples ?? []) validateTuple(t);
  for (const a of req.attributes ?? []) validateAttribute(a);
  for (const d of req.deleteAttributes ?? []) {
    if (!d?.entity) throw invalid("attribute delete");
    requireName(d.entity.type, "attribute entity type");
    requireName(d.entity.id, "attribute entity id");
    requireName(d.attribute, "attribute name");
  }
}
