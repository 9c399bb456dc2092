import { describe, expect, it } from "vitest";
import { PembaError } from "../errors.ts";
import type { SchemaDefinition } from "./ast.ts";
import { parseSchema } from "./parse-schema.ts";
import { applyPartialWrite, type EntityPartials } from "./partial.ts";

/** Permify parser case 23's schema, plus the entities it refers to. */
const REPOSITORY_SCHEMA = `
entity user {}
entity organization {
  relation admin @user
  relation member @user
}
entity repository {
  relation admin @user
  relation member @user
  action read = admin or member
}`;

function partialWrite(partials: Record<string, EntityPartials>): SchemaDefinition {
  return applyPartialWrite(parseSchema(REPOSITORY_SCHEMA), partials);
}

describe("applyPartialWrite", () => {
  it("writes, updates and deletes members of an entity", () => {
    const def = partialWrite({
      repository: {
        write: ["relation parent @organization", "relation owner  @user"],
        update: ["action read = owner and (parent.admin not parent.member)"],
        delete: ["admin", "member"],
      },
    });
    const repo = def.entities.repository;
    expect(Object.keys(repo.relations)).toEqual(["parent", "owner"]);
    expect(repo.references).toEqual({
      parent: "REFERENCE_RELATION",
      owner: "REFERENCE_RELATION",
      read: "REFERENCE_PERMISSION",
    });
    expect(repo.permissions.read.child).toMatchObject({
      kind: "rewrite",
      op: "intersection",
      children: [
        { kind: "computedUserSet", relation: "owner" },
        { kind: "rewrite", op: "exclusion" },
      ],
    });
  });

  it("adds attributes", () => {
    const def = partialWrite({
      repository: { write: ["attribute public boolean"], update: ["permission read = public"] },
    });
    expect(def.entities.repository.attributes.public.type).toBe("ATTRIBUTE_TYPE_BOOLEAN");
  });

  it("refuses to write an existing name, update or delete a missing one, or touch a missing entity", () => {
    const code = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        expect(e).toBeInstanceOf(PembaError);
        return (e as PembaError).message;
      }
      return "ok";
    };
    expect(code(() => partialWrite({ repository: { write: ["relation admin @user"] } }))).toBe(
      "ERROR_CODE_ALREADY_EXIST",
    );
    expect(code(() => partialWrite({ repository: { update: ["relation nobody @user"] } }))).toBe(
      "ERROR_CODE_REFERENCE_NOT_FOUND",
    );
    expect(code(() => partialWrite({ repository: { delete: ["nobody"] } }))).toBe(
      "ERROR_CODE_REFERENCE_NOT_FOUND",
    );
    expect(code(() => partialWrite({ nothing: { write: ["relation a @user"] } }))).toBe(
      "ERROR_CODE_ENTITY_STATEMENT_NOT_FOUND",
    );
  });

  it("re-checks the whole schema afterwards", () => {
    expect(() => partialWrite({ repository: { delete: ["admin"] } })).toThrow("undefined relation reference");
    expect(() => partialWrite({ repository: { write: ["relation x @nobody"] } })).toThrow(
      "relation reference not found in entity references",
    );
  });

  it("statement syntax errors are parse errors", () => {
    expect(() => partialWrite({ repository: { write: ["relation x user"] } })).toThrow(
      "1:17:expected next token to be SIGN, got IDENT instead",
    );
    expect(() => partialWrite({ repository: { write: ["entity x {}"] } })).toThrow(
      "no valid statement found",
    );
  });
});
