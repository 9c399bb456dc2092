/**
 * Permify's partial schema write (`schemas/partial-write`, ParsePartial + Add/Update/DeleteStatement): per entity,
 * `write` adds new relation/attribute/permission statements, `update` replaces existing ones, `delete` removes
 * members by name; the result is checked again as a whole schema.
 */
import { PembaError } from "../errors.ts";
import type { SchemaDefinition } from "./ast.ts";
import { checkSchema } from "./check.ts";
import { parseRawMember, parseRawSchema } from "./parser.ts";
import { printSchema } from "./print.ts";
import type { RawEntity } from "./raw-ast.ts";

export interface EntityPartials {
  write?: string[];
  update?: string[];
  delete?: string[];
}

export function applyPartialWrite(
  def: SchemaDefinition,
  partials: Record<string, EntityPartials>,
): SchemaDefinition {
  // Work on the statements of the printed schema so that the result is checked exactly like a full write.
  return applyPartialWriteToText(printSchema(def), partials);
}

/** applyPartialWrite on a definition's printed text (`printSchema(def)`), e.g. one sent to another thread. */
export function applyPartialWriteToText(
  printed: string,
  partials: Record<string, EntityPartials>,
): SchemaDefinition {
  const raw = parseRawSchema(printed);
  for (const [entityName, p] of Object.entries(partials)) {
    const entity = raw.statements.find((s): s is RawEntity => s.kind === "entity" && s.name === entityName);
    if (entity === undefined) throw new PembaError("ERROR_CODE_ENTITY_STATEMENT_NOT_FOUND");
    for (const text of p.write ?? []) {
      const member = parseRawMember(text, entityName);
      if (entity.members.some((m) => m.name === member.name))
        throw new PembaError("ERROR_CODE_ALREADY_EXIST");
      entity.members.push(member);
    }
    for (const text of p.update ?? []) {
      const member = parseRawMember(text, entityName);
      const at = entity.members.findIndex((m) => m.name === member.name);
      if (at < 0) throw new PembaError("ERROR_CODE_REFERENCE_NOT_FOUND");
      entity.members[at] = member;
    }
    for (const name of p.delete ?? []) {
      const at = entity.members.findIndex((m) => m.name === name.trim());
      if (at < 0) throw new PembaError("ERROR_CODE_REFERENCE_NOT_FOUND");
      entity.members.splice(at, 1);
    }
  }
  return checkSchema(raw);
}
