/**
 * Random schemas and data of a chosen size, like flagd's `ff_gen.go` (which writes N random feature flags of one
 * type to random.json): `entities` resource types over users and teams, each with `ids` instances,
 * whose `view` permission has the shape `kind` selects; plus check questions with the answer the data implies
 * (computed here from the generated tuples), so a load test can assert every decision.
 *
 * Types are named `res_a`, `res_b`, ... (Permify identifiers have no digits).
 * kinds: `direct` (owner or editor), `team` (+ editors through team#member), `nested` (+ parent.view on the
 * previous type), `attribute` (+ a boolean attribute `public`), `mixed` (each type one of these at random).
 * The same seed gives the same output.
 */
import { seededRandom } from "@pemba/core";

export const KINDS = ["direct", "team", "nested", "attribute", "mixed"] as const;
export type Kind = (typeof KINDS)[number];

export interface GenerateOptions {
  entities: number;
  ids: number;
  kind: Kind;
  checks: number;
  seed: number;
}

interface Ref {
  type: string;
  id: string;
  relation?: string;
}
export interface GeneratedTuple {
  entity: Ref;
  relation: string;
  subject: Ref;
}
export interface GeneratedAttribute {
  entity: Ref;
  attribute: string;
  value: { boolean: boolean };
}
export interface GeneratedCheck {
  entity: Ref;
  permission: string;
  subject: Ref;
  expected: "CHECK_RESULT_ALLOWED" | "CHECK_RESULT_DENIED";
}
export interface Generated {
  options: GenerateOptions;
  schema: string;
  tuples: GeneratedTuple[];
  attributes: GeneratedAttribute[];
  checks: GeneratedCheck[];
}

type Shape = Exclude<Kind, "mixed">;

/** res_a, res_b, ..., res_z, res_ba, ... */
export function typeName(index: number): string {
  let letters = "";
  let n = index;
  do {
    letters = String.fromCharCode(97 + (n % 26)) + letters;
    n = Math.floor(n / 26);
  } while (n > 0);
  return `res_${letters}`;
}

/** One resource type's generated state, enough to answer `view` for any user. */
interface Resource {
  shape: Shape;
  owner: Int32Array;
  editorUser: Int32Array; // -1: the editor is a team
  editorTeam: Int32Array; // -1: the editor is a user
  parent: Int32Array; // nested only
  isPublic: Uint8Array; // attribute only
}

export function generate(options: GenerateOptions): Generated {
  const { entities, ids, checks } = options;
  if (!(entities >= 1 && ids >= 2 && checks >= 0))
    throw new Error("generate: entities >= 1, ids >= 2, checks >= 0");
  const random = seededRandom(options.seed);
  const pick = (n: number) => Math.floor(random() * n);
  const users = ids;
  const teams = Math.max(1, Math.floor(ids / 10));
  const tuples: GeneratedTuple[] = [];
  const attributes: GeneratedAttribute[] = [];
  const ref = (type: string, id: number, relation?: string): Ref =>
    relation === undefined ? { type, id: String(id) } : { type, id: String(id), relation };

  // teams of 5 random users
  const teamMembers: Set<number>[] = [];
  for (let t = 0; t < teams; t++) {
    const members = new Set<number>();
    while (members.size < Math.min(5, users)) members.add(pick(users));
    teamMembers.push(members);
    for (const u of members)
      tuples.push({ entity: ref("team", t), relation: "member", subject: ref("user", u) });
  }

  const shapes: Shape[] = ["direct", "team", "nested", "attribute"];
  const resources: Resource[] = [];
  const schema: string[] = ["entity user {}", "entity team {\n  relation member @user\n}"];
  for (let e = 0; e < entities; e++) {
    let shape: Shape = options.kind === "mixed" ? shapes[pick(shapes.length)]! : options.kind;
    if (shape === "nested" && e === 0) shape = "team"; // the first type has no previous type to nest in
    const name = typeName(e);
    const lines = [
      "  relation owner @user",
      `  relation editor @user${shape === "direct" ? "" : " @team#member"}`,
    ];
    const view = ["owner", "editor"];
    if (shape === "nested") {
      lines.push(`  relation parent @${typeName(e - 1)}`);
      view.push("parent.view");
    }
    if (shape === "attribute") {
      lines.push("  attribute public boolean");
      view.push("public");
    }
    lines.push(`  permission view = ${view.join(" or ")}`);
    schema.push(`entity ${name} {\n${lines.join("\n")}\n}`);
    const r: Resource = {
      shape,
      owner: new Int32Array(ids),
      editorUser: new Int32Array(ids).fill(-1),
      editorTeam: new Int32Array(ids).fill(-1),
      parent: new Int32Array(ids).fill(-1),
      isPublic: new Uint8Array(ids),
    };
    for (let i = 0; i < ids; i++) {
      r.owner[i] = pick(users);
      tuples.push({ entity: ref(name, i), relation: "owner", subject: ref("user", r.owner[i]!) });
      if (shape !== "direct" && random() < 0.5) {
        r.editorTeam[i] = pick(teams);
        tuples.push({
          entity: ref(name, i),
          relation: "editor",
          subject: ref("team", r.editorTeam[i]!, "member"),
        });
      } else {
        r.editorUser[i] = pick(users);
        tuples.push({ entity: ref(name, i), relation: "editor", subject: ref("user", r.editorUser[i]!) });
      }
      if (shape === "nested") {
        r.parent[i] = pick(ids);
        tuples.push({
          entity: ref(name, i),
          relation: "parent",
          subject: ref(typeName(e - 1), r.parent[i]!),
        });
      }
      if (shape === "attribute") {
        r.isPublic[i] = random() < 0.25 ? 1 : 0;
        attributes.push({
          entity: ref(name, i),
          attribute: "public",
          value: { boolean: r.isPublic[i] === 1 },
        });
      }
    }
    resources.push(r);
  }

  const canView = (e: number, i: number, u: number): boolean => {
    const r = resources[e]!;
    if (r.owner[i] === u || r.editorUser[i] === u) return true;
    if (r.editorTeam[i]! >= 0 && teamMembers[r.editorTeam[i]!]!.has(u)) return true;
    if (r.shape === "attribute" && r.isPublic[i] === 1) return true;
    return r.shape === "nested" && canView(e - 1, r.parent[i]!, u);
  };
  const questions: GeneratedCheck[] = [];
  for (let c = 0; c < checks; c++) {
    const e = pick(entities);
    const i = pick(ids);
    // half of the questions about a user with a direct grant, so both answers are common
    const u = random() < 0.5 ? resources[e]!.owner[i]! : pick(users);
    questions.push({
      entity: ref(typeName(e), i),
      permission: "view",
      subject: ref("user", u),
      expected: canView(e, i, u) ? "CHECK_RESULT_ALLOWED" : "CHECK_RESULT_DENIED",
    });
  }
  return { options, schema: `${schema.join("\n\n")}\n`, tuples, attributes, checks: questions };
}
