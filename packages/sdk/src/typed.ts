/**
 * A client typed by one schema: `pemba codegen schema.perm -o authz.ts` emits a `SchemaTypes` description, and
 * `TypedClient<Schema>` narrows the methods that name entity types, relations, permissions and attributes so
 * that an unknown name, or a subject type a relation does not allow, fails to compile.
 */
import type { PembaClient } from "./client.ts";
import type { ExpandNode, ExplainAnswer } from "./requests.ts";
import type { CallOptions } from "./transport.ts";
import type {
  PermissionBulkCheckResponse,
  PermissionCheckRequestMetadata,
  PermissionCheckResponse,
  PermissionLookupEntityResponse,
  PermissionLookupEntityStreamResponse,
  PermissionLookupSubjectResponse,
  PermissionSubjectPermissionResponse,
  SnapTokenResponse,
} from "./wire.gen.ts";

/** An attribute's type as the schema declares it. */
export type AttributeKind =
  | "boolean"
  | "string"
  | "integer"
  | "double"
  | "boolean[]"
  | "string[]"
  | "integer[]"
  | "double[]";

/** A subject a relation allows: `@user` is `{ type: "user"; relation?: "" }`, `@group#member` names its relation. */
export interface AllowedSubject {
  type: string;
  relation?: string;
}

/** One entity type of a schema. */
export interface EntityTypes {
  /** Relation name -> the union of subjects it allows. */
  relations: { [relation: string]: AllowedSubject };
  /** Union of permission names (`never` when there are none). */
  permissions: string;
  attributes: { [attribute: string]: AttributeKind };
}

/** What `pemba codegen` emits: entity type name -> its relations, permissions and attributes. */
export type SchemaTypes = { [entityType: string]: EntityTypes };

export type EntityType<S extends SchemaTypes> = keyof S & string;
export type RelationOf<S extends SchemaTypes, T extends EntityType<S>> = keyof S[T]["relations"] & string;
/** What `check` accepts as a permission: a permission or a relation of the entity type. */
export type PermissionOf<S extends SchemaTypes, T extends EntityType<S>> =
  | S[T]["permissions"]
  | RelationOf<S, T>;
export type AttributeOf<S extends SchemaTypes, T extends EntityType<S>> = keyof S[T]["attributes"] & string;

export type TypedEntity<S extends SchemaTypes, T extends EntityType<S> = EntityType<S>> = {
  [K in T]: { type: K; id: string };
}[T];

/** A subject of a check or lookup: any entity type, optionally with one of its relations/permissions. */
export type TypedSubject<S extends SchemaTypes> = {
  [K in EntityType<S>]: { type: K; id: string; relation?: PermissionOf<S, K> | "" };
}[EntityType<S>];

/** A tuple: the relation must belong to the entity type and allow the subject's type (and relation). */
export type TypedTuple<S extends SchemaTypes> = {
  [T in EntityType<S>]: {
    [R in RelationOf<S, T>]: {
      entity: { type: T; id: string };
      relation: R;
      subject: S[T]["relations"][R] & { id: string };
    };
  }[RelationOf<S, T>];
}[EntityType<S>];

/** The value forms the server accepts for an attribute kind (Pemba's short form; Any form for Permify). */
export type AttributeValueOf<K extends AttributeKind> = K extends "boolean"
  ? { boolean: boolean } | { "@type": "type.googleapis.com/base.v1.BooleanValue"; data: boolean }
  : K extends "string"
    ? { string: string } | { "@type": "type.googleapis.com/base.v1.StringValue"; data: string }
    : K extends "integer"
      ? { integer: number } | { "@type": "type.googleapis.com/base.v1.IntegerValue"; data: number }
      : K extends "double"
        ? { double: number } | { "@type": "type.googleapis.com/base.v1.DoubleValue"; data: number }
        : K extends "boolean[]"
          ?
              | { boolean_array: boolean[] }
              | { "@type": "type.googleapis.com/base.v1.BooleanArrayValue"; data: boolean[] }
          : K extends "string[]"
            ?
                | { string_array: string[] }
                | { "@type": "type.googleapis.com/base.v1.StringArrayValue"; data: string[] }
            : K extends "integer[]"
              ?
                  | { integer_array: number[] }
                  | { "@type": "type.googleapis.com/base.v1.IntegerArrayValue"; data: number[] }
              :
                  | { double_array: number[] }
                  | { "@type": "type.googleapis.com/base.v1.DoubleArrayValue"; data: number[] };

export type TypedAttribute<S extends SchemaTypes> = {
  [T in EntityType<S>]: {
    [A in AttributeOf<S, T>]: {
      entity: { type: T; id: string };
      attribute: A;
      value: AttributeValueOf<S[T]["attributes"][A]>;
    };
  }[AttributeOf<S, T>];
}[EntityType<S>];

/** Pemba extension on written tuples and attributes: an RFC 3339 time from which the row no longer counts. */
export type Expiring = { expires_at?: string };

export interface TypedContext<S extends SchemaTypes> {
  tuples?: TypedTuple<S>[];
  attributes?: TypedAttribute<S>[];
  data?: Record<string, unknown>;
}

type CheckMetadata = { metadata?: Partial<PermissionCheckRequestMetadata> };

export type TypedCheckItem<S extends SchemaTypes> = {
  [T in EntityType<S>]: {
    entity: { type: T; id: string };
    permission: PermissionOf<S, T>;
    subject: TypedSubject<S>;
  };
}[EntityType<S>];

export type TypedCheckRequest<S extends SchemaTypes, T extends EntityType<S>> = CheckMetadata & {
  entity: { type: T; id: string };
  permission: PermissionOf<S, T>;
  subject: TypedSubject<S>;
  context?: TypedContext<S>;
};

export type TypedLookupEntityRequest<S extends SchemaTypes, T extends EntityType<S>> = CheckMetadata & {
  entity_type: T;
  permission: PermissionOf<S, T>;
  subject: TypedSubject<S>;
  context?: TypedContext<S>;
  scope?: { [K in EntityType<S>]?: { data?: string[] } };
  page_size?: number;
  continuous_token?: string;
};

export type TypedLookupSubjectRequest<
  S extends SchemaTypes,
  T extends EntityType<S>,
  U extends EntityType<S>,
> = CheckMetadata & {
  entity: { type: T; id: string };
  permission: PermissionOf<S, T>;
  subject_reference: { type: U; relation?: PermissionOf<S, U> | "" };
  context?: TypedContext<S>;
  page_size?: number;
  continuous_token?: string;
};

type Typed =
  | "withTenant"
  | "check"
  | "explain"
  | "can"
  | "bulkCheck"
  | "expand"
  | "lookupEntity"
  | "lookupEntities"
  | "lookupEntityStream"
  | "lookupSubject"
  | "lookupSubjects"
  | "subjectPermission"
  | "writeData"
  | "writeRelationships";

/** PembaClient with the schema's names checked at compile time (the same object at run time). */
export type TypedClient<S extends SchemaTypes> = Omit<PembaClient, Typed> & {
  withTenant(tenantId: string): TypedClient<S>;
  check<T extends EntityType<S>>(
    req: TypedCheckRequest<S, T>,
    call?: CallOptions,
  ): Promise<PermissionCheckResponse>;
  explain<T extends EntityType<S>>(req: TypedCheckRequest<S, T>, call?: CallOptions): Promise<ExplainAnswer>;
  can<T extends EntityType<S>>(
    entity: { type: T; id: string },
    permission: PermissionOf<S, T>,
    subject: TypedSubject<S>,
    context?: TypedContext<S>,
    call?: CallOptions,
  ): Promise<boolean>;
  bulkCheck(
    req: CheckMetadata & { items: TypedCheckItem<S>[]; context?: TypedContext<S> },
    call?: CallOptions,
  ): Promise<PermissionBulkCheckResponse>;
  expand<T extends EntityType<S>>(
    req: { metadata?: { schema_version?: string; snap_token?: string } } & {
      entity: { type: T; id: string };
      permission?: PermissionOf<S, T>;
      context?: TypedContext<S>;
    },
    call?: CallOptions,
  ): Promise<{ tree: ExpandNode }>;
  lookupEntity<T extends EntityType<S>>(
    req: TypedLookupEntityRequest<S, T>,
    call?: CallOptions,
  ): Promise<PermissionLookupEntityResponse>;
  lookupEntities<T extends EntityType<S>>(
    req: Omit<TypedLookupEntityRequest<S, T>, "continuous_token">,
    call?: CallOptions,
  ): AsyncGenerator<string>;
  lookupEntityStream<T extends EntityType<S>>(
    req: TypedLookupEntityRequest<S, T>,
    call?: CallOptions,
  ): AsyncGenerator<PermissionLookupEntityStreamResponse["result"]>;
  lookupSubject<T extends EntityType<S>, U extends EntityType<S>>(
    req: TypedLookupSubjectRequest<S, T, U>,
    call?: CallOptions,
  ): Promise<PermissionLookupSubjectResponse>;
  lookupSubjects<T extends EntityType<S>, U extends EntityType<S>>(
    req: Omit<TypedLookupSubjectRequest<S, T, U>, "continuous_token">,
    call?: CallOptions,
  ): AsyncGenerator<string>;
  subjectPermission(
    req: CheckMetadata & {
      metadata?: { only_permission?: boolean };
      entity: TypedEntity<S>;
      subject: TypedSubject<S>;
      context?: TypedContext<S>;
    },
    call?: CallOptions,
  ): Promise<PermissionSubjectPermissionResponse>;
  writeData(
    req: {
      metadata?: { schema_version?: string };
      tuples?: (TypedTuple<S> & Expiring)[];
      attributes?: (TypedAttribute<S> & Expiring)[];
    },
    call?: CallOptions,
  ): Promise<SnapTokenResponse>;
  writeRelationships(
    req: { metadata?: { schema_version?: string }; tuples: (TypedTuple<S> & Expiring)[] },
    call?: CallOptions,
  ): Promise<SnapTokenResponse>;
};
