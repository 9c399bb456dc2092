/**
 * The answers of the engine and the service in Permify's JSON (expand trees, explain proofs, schema diffs); the model
 * <-> wire conversions of tuples, attributes, contexts and filters are in wire/convert.ts (re-exported here).
 */

import type { Explanation, ProofNode } from "../engine/explain.ts";
import type { ExpandNode } from "../engine/types.ts";
import type { AttributeValue } from "../model.ts";
import type { SchemaDiffAnswer } from "../service/pemba-service.ts";
import { orphanedRows } from "../service/schema-diff.ts";
import { attributeValueToWire } from "../wire/convert.ts";
import type { SchemaDiffResponse } from "../wire/schema.ts";

export {
  attributeFilterFromWire,
  attributeFromWire,
  attributeToWire,
  attributeValueFromWire,
  attributeValueToWire,
  contextFromWire,
  tupleFilterFromWire,
  tupleFromWire,
  tupleToWire,
} from "../wire/convert.ts";

const isAttributeValue = (v: unknown): v is AttributeValue =>
  typeof v === "object" &&
  v !== null &&
  typeof (v as AttributeValue).type === "string" &&
  (v as AttributeValue).type.startsWith("ATTRIBUTE_TYPE_");

const anyToWire = (v: unknown) => (isAttributeValue(v) ? attributeValueToWire(v) : v);

/** The expand tree in Permify's JSON (attribute values as Any). */
export function expandToWire(node: ExpandNode): unknown {
  const base = {
    entity: { type: node.entity.type, id: node.entity.id },
    permission: node.permission,
    arguments: node.arguments,
  };
  if ("expand" in node) {
    return {
      ...base,
      expand: { operation: node.expand.operation, children: node.expand.children.map(expandToWire) },
    };
  }
  const leaf = node.leaf;
  if ("subjects" in leaf) {
    return {
      ...base,
      leaf: {
        subjects: {
          subjects: leaf.subjects.subjects.map((s) => ({
            type: s.type,
            id: s.id,
            relation: s.relation ?? "",
          })),
        },
      },
    };
  }
  if ("values" in leaf) {
    const values: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(leaf.values.values)) values[k] = anyToWire(v);
    return { ...base, leaf: { values: { values } } };
  }
  return { ...base, leaf: { value: anyToWire(leaf.value) } };
}

/** A schema diff on the wire (snake_case; the same JSON `pemba schema diff --json` prints). */
export function schemaDiffToWire(answer: SchemaDiffAnswer): SchemaDiffResponse {
  const r = answer.report;
  return {
    base_version: answer.baseVersion,
    snap_token: answer.snapToken,
    measured: r.measured,
    orphaned_rows: orphanedRows(r),
    sample: {
      size: r.sample.size,
      seed: r.sample.seed,
      pair_budget: r.sample.pairBudget,
      limited_by_budget: r.sample.limitedByBudget,
    },
    removed: r.removed,
    added: r.added,
    attribute_type_changes: r.attributeTypeChanges,
    permissions: r.permissions.map((p) => ({
      entity: p.entity,
      permission: p.permission,
      subject_types: p.subjectTypes,
      pairs: p.pairs,
      checked: p.checked,
      sampled: p.sampled,
      allowed_to_denied: p.allowedToDenied,
      denied_to_allowed: p.deniedToAllowed,
      examples: p.examples,
    })),
    unchanged_permissions: r.unchangedPermissions,
  };
}

/** An attribute value in Permify's Any form. */
export type ProofValue = {
  "@type": string;
  data: unknown;
};

/** A proof node on the wire: attribute values in Permify's Any form. */
export type WireProofNode = ProofNode<ProofValue>;

/** The explain answer in Permify's JSON: the check answer plus the proof (the HTTP body). */
export interface ExplainResponse {
  can: Explanation["can"];
  metadata: { check_count: number };
  proof: WireProofNode;
  /** True when some node was replaced by a `cut` node (the node budget was reached). */
  truncated: boolean;
}

export interface ExplainOptions {
  /** The most proof nodes shown (DEFAULT_EXPLAIN_NODES); past it nodes are `cut`. */
  maxNodes?: number;
  /** About the most JSON bytes of the proof (DEFAULT_EXPLAIN_BYTES); past it nodes are `cut`. */
  maxBytes?: number;
}

/** The most proof nodes an explain shows unless told otherwise. */
export const DEFAULT_EXPLAIN_NODES = 1000;
/** The most JSON bytes of the proof an explain answers unless told otherwise. */
export const DEFAULT_EXPLAIN_BYTES = 512 * 1024;

/**
 * The explain answer in Permify's JSON, its proof within `maxNodes` nodes and about `maxBytes` bytes of JSON
 * (pre-order); past that the rest of a node's children are replaced by one `cut` node (their results are known,
 * their proofs are not shown) and `truncated` is true. A node shared in the proof stays shared.
 */
export function explainToWire(answer: Explanation, options: ExplainOptions = {}): ExplainResponse {
  const converted = new Map<ProofNode, WireProofNode>();
  const toWire = (n: ProofNode): WireProofNode => {
    let w = converted.get(n);
    if (w !== undefined) return w;
    // keys in the node's own order (a key assigned again keeps its place)
    const { attribute, rule } = n;
    const node = { ...n, attribute: undefined, rule: undefined, children: [] } as WireProofNode;
    if (attribute === undefined) delete node.attribute;
    else node.attribute = { ...attribute, value: attributeValueToWire(attribute.value) };
    if (rule === undefined) delete node.rule;
    else {
      const args: Record<string, ProofValue> = {};
      for (const [name, value] of Object.entries(rule.arguments)) args[name] = attributeValueToWire(value);
      node.rule = { ...rule, arguments: args };
    }
    w = node;
    converted.set(n, w);
    for (const c of n.children) w.children.push(toWire(c));
    return w;
  };
  const { proof, truncated } = bound(
    toWire(answer.proof),
    options.maxNodes ?? DEFAULT_EXPLAIN_NODES,
    options.maxBytes ?? DEFAULT_EXPLAIN_BYTES,
  );
  return { can: answer.can, metadata: answer.metadata, proof, truncated };
}

/** Bytes a cut node takes at most in JSON (names of 64 characters, an id of 128, the reason). */
const CUT_NODE_BYTES = 512;

/** JSON bytes of a node without its children (its text is ASCII but for ids and values; UTF-16 units bound them). */
const ownBytes = (n: WireProofNode): number => JSON.stringify({ ...n, children: [] }).length;

/**
 * The proof within `maxNodes` nodes and about `maxBytes` bytes of JSON (pre-order; the root is always shown). Where
 * the budget runs out, the rest of a node's children are replaced by ONE `cut` node that says how many it stands
 * for, so the answer holds at most one cut node per shown node: every shown node reserves a cut node's bytes.
 * Memoized nodes are shared and counted each time they appear.
 */
function bound(
  root: WireProofNode,
  maxNodes: number,
  maxBytes: number,
): { proof: WireProofNode; truncated: boolean } {
  let nodes = 0;
  let bytes = 0;
  const fitsWhole = (n: WireProofNode): boolean => {
    bytes += ownBytes(n);
    if (++nodes > maxNodes || bytes > maxBytes) return false;
    for (const c of n.children) if (!fitsWhole(c)) return false;
    return true;
  };
  if (fitsWhole(root)) return { proof: root, truncated: false };
  let leftNodes = maxNodes - 1;
  let leftBytes = maxBytes - ownBytes(root) - CUT_NODE_BYTES;
  const show = (n: WireProofNode): boolean => {
    if (leftNodes === 0) return false;
    const size = ownBytes(n) + CUT_NODE_BYTES;
    if (size > leftBytes) return false;
    leftNodes--;
    leftBytes -= size;
    return true;
  };
  const copy = (n: WireProofNode): WireProofNode => {
    const children: WireProofNode[] = [];
    for (let i = 0; i < n.children.length; i++) {
      const c = n.children[i]!;
      if (show(c)) {
        children.push(copy(c));
        continue;
      }
      const more = n.children.length - i;
      children.push({
        kind: "cut",
        entity: c.entity,
        name: c.name,
        result: c.result,
        reason: `proof cut (at most ${maxNodes} nodes, ${maxBytes} bytes): ${more === 1 ? "this node" : `this node and ${more - 1} more`} not shown`,
        omitted: more,
        children: [],
      });
      break;
    }
    return { ...n, children };
  };
  return { proof: copy(root), truncated: true };
}
