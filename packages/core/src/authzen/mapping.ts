/**
 * An AuthZEN question in Pemba's terms, read against the tenant's compiled schema:
 * - the subject is the check's subject `{type, id}` and the resource its entity; ids that Permify's rules refuse
 *   are encoded (ids.ts);
 * - the action's name is a permission of the resource's type, or one of its relations when
 *   `action.properties.relation` is `true`;
 * - the properties of the subject and the resource become contextual data of that entity: a property named as an
 *   attribute of the entity's type (exactly, or in snake_case: `ownerID` -> `owner_id`) is a contextual attribute
 *   of the schema's type; one named as a relation is a contextual relationship to the id(s) it holds (typed by
 *   the relation's first plain type); other properties are not data;
 * - `context.data` is the request's `context`, with the subject's and the action's properties under `subject`
 *   and `action` (a permission of the resource cannot read the subject's attributes: rules read these).
 * A question that names what the schema does not have (an unknown type or action) is refused: `decision: false`.
 */
import type { CompiledSchema } from "../compile/index.ts";
import type { CheckQuery } from "../engine/types.ts";
import type { Attribute, AttributeType, AttributeValue, Context, Tuple } from "../model.ts";
import type { EntityDefinition } from "../schema/index.ts";
import { encodeId } from "./ids.ts";

export interface AuthzenEntityIn {
  type: string;
  id: string;
  properties?: Record<string, unknown>;
}

export interface AuthzenActionIn {
  name: string;
  properties?: Record<string, unknown>;
}

export interface AuthzenQuestion {
  subject: AuthzenEntityIn;
  action: AuthzenActionIn;
  resource: AuthzenEntityIn;
  context?: Record<string, unknown>;
}

/** Why a question gets `decision: false` without an evaluation: an HTTP-like status and a message. */
export interface Refusal {
  status: number;
  message: string;
}

/** A question as the engine asks it. */
export interface MappedQuestion {
  query: CheckQuery;
  /**
   * The question's contextual data: relationships and attributes from properties, and `context.data`; undefined
   * when the request has no context and no properties (the check's own fast path).
   */
  context: Context | undefined;
  /** Groups questions that can share one evaluation: "" for no context and no subject or action properties. */
  dataKey: string;
}

export const refused = (status: number, message: string): { refusal: Refusal } => ({
  refusal: { status, message },
});

const snakeCase = (name: string): string =>
  name
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .replace(/[^A-Za-z0-9_]+/g, "_")
    .toLowerCase();

/** The schema member a property names: exactly, else in snake_case. */
function memberOf(def: EntityDefinition, key: string): string | undefined {
  if (Object.hasOwn(def.references, key)) return key;
  const snake = snakeCase(key);
  return Object.hasOwn(def.references, snake) ? snake : undefined;
}

const SCALAR_OF: Record<string, "boolean" | "string" | "integer" | "double"> = {
  ATTRIBUTE_TYPE_BOOLEAN: "boolean",
  ATTRIBUTE_TYPE_STRING: "string",
  ATTRIBUTE_TYPE_INTEGER: "integer",
  ATTRIBUTE_TYPE_DOUBLE: "double",
};

function fits(scalar: string, v: unknown): boolean {
  if (scalar === "boolean") return typeof v === "boolean";
  if (scalar === "string") return typeof v === "string";
  if (scalar === "integer") return typeof v === "number" && Number.isSafeInteger(v);
  return typeof v === "number" && Number.isFinite(v);
}

/** A property's value as the attribute's type; undefined when it is not of that type. */
function typedValue(type: AttributeType, value: unknown): AttributeValue | undefined {
  const array = type.endsWith("_ARRAY");
  const scalar = SCALAR_OF[array ? type.slice(0, -6) : type]!;
  if (array) {
    if (!Array.isArray(value) || !value.every((v) => fits(scalar, v))) return undefined;
    return { type, data: value as AttributeValue["data"] };
  }
  return fits(scalar, value) ? { type, data: value as AttributeValue["data"] } : undefined;
}

/** Contextual attributes and relationships of `entity` from its properties; a refusal for a mistyped value. */
function propertyData(
  schema: CompiledSchema,
  role: "subject" | "resource",
  entity: { type: string; id: string },
  def: EntityDefinition,
  props: Record<string, unknown>,
  tuples: Tuple[],
  attributes: Attribute[],
): Refusal | undefined {
  for (const key in props) {
    const name = memberOf(def, key);
    if (name === undefined) continue;
    const value = props[key];
    const attribute = def.attributes[name];
    if (attribute !== undefined) {
      const typed = typedValue(attribute.type, value);
      if (typed === undefined) {
        const want = attribute.type.slice("ATTRIBUTE_TYPE_".length).toLowerCase();
        return { status: 400, message: `${role}.properties.${key}: expected ${want} (attribute ${name})` };
      }
      attributes.push({ entity, attribute: name, value: typed });
      continue;
    }
    const relation = def.relations[name];
    const target = relation?.references.find((r) => r.relation === "" && schema.entities.has(r.type));
    if (relation === undefined || target === undefined) continue;
    const ids = Array.isArray(value) ? value : [value];
    for (const raw of ids) {
      if (typeof raw !== "string") {
        return { status: 400, message: `${role}.properties.${key}: expected an id or a list of ids` };
      }
      const id = encodeId(raw);
      if (id === undefined) return { status: 400, message: `${role}.properties.${key}: id too long` };
      tuples.push({ entity, relation: name, subject: { type: target.type, id, relation: "" } });
    }
  }
  return undefined;
}

/** The question in Pemba's terms, or why it is not asked. */
export function mapQuestion(
  schema: CompiledSchema,
  q: AuthzenQuestion,
): MappedQuestion | { refusal: Refusal } {
  const entities = schema.definition.entities;
  const resourceDef = Object.hasOwn(entities, q.resource.type) ? entities[q.resource.type] : undefined;
  if (resourceDef === undefined)
    return refused(404, `resource type "${q.resource.type}" is not in the schema`);
  const subjectDef = Object.hasOwn(entities, q.subject.type) ? entities[q.subject.type] : undefined;
  if (subjectDef === undefined) return refused(404, `subject type "${q.subject.type}" is not in the schema`);
  const name = q.action.name;
  const kind = Object.hasOwn(resourceDef.references, name) ? resourceDef.references[name] : undefined;
  const asRelation = q.action.properties?.relation === true;
  if (!(kind === "REFERENCE_PERMISSION" || (kind === "REFERENCE_RELATION" && asRelation))) {
    return refused(
      404,
      `"${name}" is not a ${asRelation ? "relation" : "permission"} of "${q.resource.type}"`,
    );
  }
  const resourceId = encodeId(q.resource.id);
  if (resourceId === undefined) return refused(400, "resource.id: id too long");
  const subjectId = encodeId(q.subject.id);
  if (subjectId === undefined) return refused(400, "subject.id: id too long");
  const entity = { type: q.resource.type, id: resourceId };
  const subject = { type: q.subject.type, id: subjectId, relation: "" };
  const tuples: Tuple[] = [];
  const attributes: Attribute[] = [];
  const sp = q.subject.properties;
  const rp = q.resource.properties;
  const refusal =
    (sp && propertyData(schema, "subject", subject, subjectDef, sp, tuples, attributes)) ||
    (rp && propertyData(schema, "resource", entity, resourceDef, rp, tuples, attributes));
  if (refusal) return { refusal };
  const ap = q.action.properties;
  const plain = q.context === undefined && sp === undefined && ap === undefined;
  return {
    query: { entity, permission: name, subject },
    context:
      plain && tuples.length === 0 && attributes.length === 0
        ? undefined
        : { tuples, attributes, data: plain ? {} : contextData(q.context, sp, ap) },
    dataKey: plain ? "" : JSON.stringify([q.context, sp, ap]),
  };
}

/**
 * `context.data`: the request's context, the subject's properties at `subject`, the action's at `action` (`{}`
 * when absent). A request without context and properties has an empty `context.data`: a rule tests
 * `has(context.data.action) && has(context.data.action.soft)`.
 */
export function contextData(
  context: Record<string, unknown> | undefined,
  subjectProperties: Record<string, unknown> | undefined,
  actionProperties: Record<string, unknown> | undefined,
): Record<string, unknown> {
  return { ...context, subject: subjectProperties ?? {}, action: actionProperties ?? {} };
}
