/**
 * The parser's output: Permify's statements (entities with their members, rules) before reference checks,
 * with the token positions that compile errors quote.
 */
import type { SourcePosition } from "./ast.ts";

export interface NamePart {
  name: string;
  pos: SourcePosition;
}

export type RawExpr =
  | { kind: "infix"; op: "and" | "or" | "not"; left: RawExpr; right: RawExpr }
  | { kind: "identifier"; parts: NamePart[] }
  | { kind: "call"; name: string; pos: SourcePosition; args: NamePart[][] };

export interface RawRelation {
  kind: "relation";
  name: string;
  pos: SourcePosition;
  types: { type: string; relation: string; pos: SourcePosition }[];
}

export interface RawAttribute {
  kind: "attribute";
  name: string;
  pos: SourcePosition;
  typeName: string;
  isArray: boolean;
  typePos: SourcePosition;
}

export interface RawPermission {
  kind: "permission";
  name: string;
  pos: SourcePosition;
  expr: RawExpr;
}

export type RawMember = RawRelation | RawAttribute | RawPermission;

export interface RawEntity {
  kind: "entity";
  name: string;
  pos: SourcePosition;
  members: RawMember[];
}

export interface RawRule {
  kind: "rule";
  name: string;
  pos: SourcePosition;
  params: { name: string; typeName: string; isArray: boolean; typePos: SourcePosition }[];
  body: string;
}

export interface RawSchema {
  statements: (RawEntity | RawRule)[];
}
