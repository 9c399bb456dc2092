/**
 * The client's request and answer types, built from the generated wire types (wire.gen.ts): a request's
 * `metadata` is optional (the client fills the depth, the schema version and, in session mode, the snap token).
 */
import type {
  Attribute,
  Entity,
  PermissionExpandResponse,
  PermissionExplainResponse,
  ProofNode,
  Subject,
  Tuple,
  WatchResponse,
} from "./wire.gen.ts";

/** A wire request whose `metadata` (and each of its fields) may be left out. */
export type WithOptionalMetadata<T> = T extends { metadata: infer M }
  ? Omit<T, "metadata"> & { metadata?: Partial<M> }
  : T;

/** A request with paging fields left to the client (for the iterators over every page). */
export type AllPages<T> = Omit<WithOptionalMetadata<T>, "continuous_token">;

export type CheckResult = "CHECK_RESULT_UNSPECIFIED" | "CHECK_RESULT_ALLOWED" | "CHECK_RESULT_DENIED";

/** `"document:1"`, `"group:7#member"` or the object itself. */
export type EntityInput = Entity | string;
export type SubjectInput = Subject | string;

/** One change of a watched transaction: a tuple or an attribute written (CREATE) or deleted (DELETE). */
export interface DataChange {
  operation: WatchResponse["changes"]["data_changes"][number]["operation"];
  tuple?: Tuple;
  attribute?: Attribute;
}

/** One transaction after the watch's starting token. */
export interface WatchChanges {
  snap_token: string;
  data_changes: DataChange[];
}

type ExpandTree = PermissionExpandResponse["tree"];

/** An expand node; `expand.children` are nodes again (the wire schema documents one level only). */
export interface ExpandNode extends Omit<ExpandTree, "expand"> {
  expand?: { operation: NonNullable<ExpandTree["expand"]>["operation"]; children: ExpandNode[] };
}

/** A proof node of explain; `children` are nodes again (the wire schema documents one level only). */
export interface Proof extends Omit<ProofNode, "children"> {
  children: Proof[];
}

/** The explain answer (Pemba's extension): the check answer plus its proof. */
export interface ExplainAnswer extends Omit<PermissionExplainResponse, "proof"> {
  proof: Proof;
}

/** Parses `"type:id"` or `"type:id#relation"`. */
export function parseRef(ref: string): Subject {
  const hash = ref.indexOf("#");
  const object = hash < 0 ? ref : ref.slice(0, hash);
  const colon = object.indexOf(":");
  if (colon <= 0 || colon === object.length - 1) throw new TypeError(`expected "type:id", got "${ref}"`);
  const subject: Subject = { type: object.slice(0, colon), id: object.slice(colon + 1) };
  if (hash >= 0) subject.relation = ref.slice(hash + 1);
  return subject;
}

export const toEntity = (e: EntityInput): Entity => {
  if (typeof e !== "string") return e;
  const { type, id } = parseRef(e);
  return { type, id };
};

export const toSubject = (s: SubjectInput): Subject => (typeof s === "string" ? parseRef(s) : s);
