/**
 * lookup-entity: a reverse walk from the subject (subject → entities, via store.querySubjectTuples, one batched
 * call per round, semi-naive so each id is propagated once) yields candidate ids; for attribute and rule leaves the
 * candidates are every id of the type known to the store. Each candidate is then confirmed with a check, so the
 * result agrees with check for every id.
 */
import { type CompiledSchema, dependencyClosure } from "../compile/index.ts";
import type { Tuple } from "../model.ts";
import type { SubjectTupleQuery } from "../store/store.ts";
import { Evaluation } from "./evaluation/evaluation.ts";
import { confirmPage, contextIds } from "./lookup-paging.ts";
import type { EvaluationTarget, LookupEntityQuery } from "./types.ts";

const typeOf = (node: string) => node.slice(0, node.indexOf("#"));
const nameOf = (node: string) => node.slice(node.indexOf("#") + 1);

export async function lookupEntity(
  compiled: CompiledSchema,
  target: EvaluationTarget,
  query: LookupEntityQuery,
): Promise<{ entityIds: string[]; continuousToken: string }> {
  // Permify walks its schema graph backwards from the subject: a type or permission it does not know (or a rule
  // name, which no entrance leads to) is reached by no path, so the answer is an empty page, not an error.
  const entity = compiled.entities.get(query.entityType);
  if (!entity?.members.has(query.permission)) return { entityIds: [], continuousToken: "" };
  const graph = compiled.reverseGraph();
  const start = `${query.entityType}#${query.permission}`;
  const closure = dependencyClosure(graph, start);
  const { store, tenantId, snap, at } = target;
  const subject = query.subject;
  const contextTuples = target.context?.tuples ?? [];

  // The scope restricts the objects the reverse walk reads from the data (as Permify's entity filter does): a
  // tuple or attribute whose entity is of a scoped type but not in its scope leads nowhere, so a path through an
  // out-of-scope object yields no candidate. It never restricts the subject the walk starts from, nor the facts
  // that a permission of an object already reached derives on that same object; the answer is then kept to the
  // result type's scope.
  const scopes = new Map<string, Set<string>>();
  for (const [type, ids] of Object.entries(query.scope ?? {}))
    if (ids.length > 0) scopes.set(type, new Set(ids));
  const inScope = (type: string, id: string) => scopes.get(type)?.has(id) !== false;
  const facts = new Map<string, Set<string>>();
  let delta = new Map<string, Set<string>>();
  /** `read`: the fact comes from an object read from the data (a tuple's entity, an id of an attribute leaf). */
  const addFact = (node: string, id: string, read: boolean) => {
    if (!closure.has(node)) return;
    if (read && !inScope(typeOf(node), id)) return;
    let set = facts.get(node);
    if (!set) {
      set = new Set();
      facts.set(node, set);
    }
    if (set.has(id)) return;
    set.add(id);
    const d = delta.get(node);
    if (d) d.add(id);
    else delta.set(node, new Set([id]));
  };

  const matches = (t: Tuple, q: SubjectTupleQuery) =>
    t.entity.type === q.entityType &&
    q.relations.includes(t.relation) &&
    t.subject.type === q.subjectType &&
    t.subject.relation === q.subjectRelation &&
    q.subjectIds.includes(t.subject.id);
  const querySubjects = async (queries: SubjectTupleQuery[]): Promise<Tuple[]> => {
    if (queries.length === 0) return [];
    const rows = [...(await store.querySubjectTuples(tenantId, snap, queries, at))];
    for (const t of contextTuples) if (queries.some((q) => matches(t, q))) rows.push(t);
    return rows;
  };

  // Seeds: the subject itself (self rule), tuples naming the subject directly, and universal members.
  addFact(`${subject.type}#${subject.relation}`, subject.id, false);
  const direct: SubjectTupleQuery[] = [];
  for (const node of closure) {
    const kind = compiled.entities.get(typeOf(node))?.kinds.get(nameOf(node));
    if (kind === "relation")
      direct.push({
        entityType: typeOf(node),
        relations: [nameOf(node)],
        subjectType: subject.type,
        subjectIds: [subject.id],
        subjectRelation: subject.relation,
      });
  }
  for (const t of await querySubjects(direct)) addFact(`${t.entity.type}#${t.relation}`, t.entity.id, true);
  const universeTypes = new Set<string>();
  for (const node of closure) if (graph.universal.has(node)) universeTypes.add(typeOf(node));
  for (const type of universeTypes) {
    const ids = [
      ...(await store.listObjectIds(tenantId, snap, type, at)),
      ...contextIds(target.context, type),
    ];
    for (const node of closure) {
      if (graph.universal.has(node) && typeOf(node) === type) for (const id of ids) addFact(node, id, true);
    }
  }

  // Propagate new facts along reverse edges until nothing changes.
  while (delta.size > 0) {
    const current = delta;
    delta = new Map();
    const queries: SubjectTupleQuery[] = [];
    const targets = new Map<string, string[]>();
    for (const [node, ids] of current) {
      for (const edge of graph.edges.get(node) ?? []) {
        if (!closure.has(edge.to)) continue;
        if (edge.kind === "same") {
          for (const id of ids) addFact(edge.to, id, false);
          continue;
        }
        for (const subjectRelation of edge.subjectRelations) {
          const key = `${edge.entityType}\u0000${edge.relation}\u0000${typeOf(node)}\u0000${subjectRelation}`;
          const list = targets.get(key);
          if (list) {
            if (!list.includes(edge.to)) list.push(edge.to);
          } else targets.set(key, [edge.to]);
          queries.push({
            entityType: edge.entityType,
            relations: [edge.relation],
            subjectType: typeOf(node),
            subjectIds: [...ids],
            subjectRelation,
          });
        }
      }
    }
    for (const t of await querySubjects(queries)) {
      const key = `${t.entity.type}\u0000${t.relation}\u0000${t.subject.type}\u0000${t.subject.relation}`;
      for (const to of targets.get(key) ?? []) addFact(to, t.entity.id, true);
    }
  }

  const candidates = [...(facts.get(start) ?? [])].filter((id) => inScope(query.entityType, id));
  const evaluation = new Evaluation(compiled, target, subject);
  const page = await confirmPage(
    evaluation,
    candidates,
    (id) => ({ entity: { type: query.entityType, id }, permission: query.permission, subject }),
    target.depth,
    query.pageSize,
    query.continuousToken,
  );
  return { entityIds: page.ids, continuousToken: page.continuousToken };
}
