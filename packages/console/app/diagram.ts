/**
 * The model as a picture: a box per entity (its relations, attributes and permissions) and per rule, an arrow per
 * relation to each subject type it allows, a dashed arrow per permission hop to another entity (`parent.view`) and
 * per rule call. dagre lays it out; the page draws it as SVG.
 */
import dagre from "@dagrejs/dagre";
import type { PermissionExpr, SchemaDefinition } from "@pemba/core";

const SVG = "http://www.w3.org/2000/svg";
const LINE = 16;
const CHAR = 7.2;

interface Box {
  title: string;
  lines: string[];
  kind: "entity" | "rule";
}

interface Arrow {
  from: string;
  to: string;
  label: string;
  hop: boolean;
}

function expressionHops(expr: PermissionExpr, out: PermissionExpr[]): void {
  if (expr.kind !== "rewrite") out.push(expr);
  else for (const child of expr.children) expressionHops(child, out);
}

/** Boxes and arrows of a schema (exported for tests: what the picture must show). */
export function modelGraph(schema: SchemaDefinition): { boxes: Map<string, Box>; arrows: Arrow[] } {
  const boxes = new Map<string, Box>();
  const arrows: Arrow[] = [];
  for (const [name, entity] of Object.entries(schema.entities)) {
    const lines = [
      ...Object.values(entity.relations).map(
        (r) =>
          `relation ${r.name} @${r.references.map((x) => (x.relation ? `${x.type}#${x.relation}` : x.type)).join(" @")}`,
      ),
      ...Object.values(entity.attributes).map((a) => `attribute ${a.name}`),
      ...Object.values(entity.permissions).map((p) => `permission ${p.name}`),
    ];
    boxes.set(`entity:${name}`, { title: `entity ${name}`, lines, kind: "entity" });
    for (const r of Object.values(entity.relations)) {
      for (const ref of r.references) {
        arrows.push({
          from: `entity:${name}`,
          to: `entity:${ref.type}`,
          label: ref.relation ? `${r.name} (#${ref.relation})` : r.name,
          hop: false,
        });
      }
    }
    for (const p of Object.values(entity.permissions)) {
      const leaves: PermissionExpr[] = [];
      expressionHops(p.child, leaves);
      for (const leaf of leaves) {
        if (leaf.kind === "tupleToUserSet") {
          const relation = entity.relations[leaf.tupleSet];
          for (const ref of relation?.references ?? []) {
            arrows.push({
              from: `entity:${name}`,
              to: `entity:${ref.type}`,
              label: `${p.name}: ${leaf.tupleSet}.${leaf.computed}`,
              hop: true,
            });
          }
        } else if (leaf.kind === "call") {
          arrows.push({ from: `entity:${name}`, to: `rule:${leaf.ruleName}`, label: p.name, hop: true });
        }
      }
    }
  }
  for (const [name, rule] of Object.entries(schema.rules)) {
    const params = rule.parameters.map((p) => p.name).join(", ");
    boxes.set(`rule:${name}`, { title: `rule ${name}(${params})`, lines: [rule.expression], kind: "rule" });
  }
  // a dangling reference cannot pass the checker, but keep the picture total
  for (const a of arrows) if (!boxes.has(a.to)) boxes.set(a.to, { title: a.to, lines: [], kind: "entity" });
  return { boxes, arrows };
}

function el<K extends keyof SVGElementTagNameMap>(
  name: K,
  attrs: Record<string, string | number>,
  text?: string,
): SVGElementTagNameMap[K] {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

/** Above this many boxes the page lists the model instead of laying it out (dagre's time grows fast). */
export const MAX_DIAGRAM_BOXES = 40;

/** Arrows between the same two boxes, drawn as one line with a label row each. */
interface Edge {
  from: string;
  to: string;
  arrows: Arrow[];
}

function edgesOf(arrows: Arrow[]): Edge[] {
  const byPair = new Map<string, Edge>();
  for (const a of arrows) {
    const key = `${a.from}\n${a.to}`;
    const edge = byPair.get(key) ?? { from: a.from, to: a.to, arrows: [] };
    byPair.set(key, edge);
    edge.arrows.push(a);
  }
  return [...byPair.values()];
}

/** Lays the schema out with dagre and draws it into `into` as one SVG. */
export function drawDiagram(schema: SchemaDefinition, into: HTMLElement): void {
  const { boxes, arrows } = modelGraph(schema);
  if (boxes.size > MAX_DIAGRAM_BOXES) {
    const note = document.createElement("p");
    note.className = "diagram-too-large";
    note.textContent =
      `${boxes.size} entities and rules, ${arrows.length} arrows: more than ${MAX_DIAGRAM_BOXES} boxes are not ` +
      `laid out in the page. ${[...boxes.values()].map((b) => b.title).join(", ")}`;
    into.replaceChildren(note);
    return;
  }
  const edges = edgesOf(arrows);
  const g = new dagre.graphlib.Graph({ multigraph: true });
  g.setGraph({ rankdir: "TB", nodesep: 40, ranksep: 60, marginx: 10, marginy: 10 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const [id, box] of boxes) {
    const longest = Math.max(box.title.length, ...box.lines.map((l) => l.length));
    g.setNode(id, { width: Math.min(longest, 60) * CHAR + 16, height: (box.lines.length + 1) * LINE + 12 });
  }
  edges.forEach((e, i) => {
    const width = Math.max(...e.arrows.map((a) => a.label.length)) * 6.2;
    g.setEdge(e.from, e.to, { width, height: 13 * e.arrows.length, labelpos: "c" }, `e${i}`);
  });
  dagre.layout(g);
  const graph = g.graph();
  const svg = el("svg", {
    width: Math.ceil(graph.width ?? 0),
    height: Math.ceil(graph.height ?? 0),
    class: "diagram",
    role: "img",
    "aria-label": "model diagram",
  });
  const defs = el("defs", {});
  const marker = el("marker", {
    id: "arrow",
    viewBox: "0 0 10 10",
    refX: 10,
    refY: 5,
    markerWidth: 7,
    markerHeight: 7,
    orient: "auto-start-reverse",
  });
  marker.append(el("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#555" }));
  defs.append(marker);
  svg.append(defs);
  edges.forEach((e, i) => {
    const edge = g.edge({ v: e.from, w: e.to, name: `e${i}` });
    const points = edge.points ?? [];
    const hop = e.arrows.every((a) => a.hop);
    const group = el("g", { class: hop ? "edge hop" : "edge", "data-from": e.from, "data-to": e.to });
    group.append(
      el("polyline", {
        points: points.map((p: { x: number; y: number }) => `${p.x},${p.y}`).join(" "),
        fill: "none",
        "marker-end": "url(#arrow)",
      }),
    );
    if (edge.x !== undefined && edge.y !== undefined) {
      const top = edge.y - (13 * (e.arrows.length - 1)) / 2 + 4;
      const text = el("text", { x: edge.x, y: top, "text-anchor": "middle" });
      e.arrows.forEach((a, row) => {
        text.append(
          el("tspan", { x: edge.x!, y: top + 13 * row, class: a.hop ? "hop" : "relation" }, a.label),
        );
      });
      group.append(text);
    }
    svg.append(group);
  });
  for (const [id, box] of boxes) {
    const node = g.node(id);
    const x = node.x - node.width / 2;
    const y = node.y - node.height / 2;
    const group = el("g", { class: `node ${box.kind}`, "data-id": id });
    group.append(el("rect", { x, y, width: node.width, height: node.height, rx: 5 }));
    group.append(el("text", { x: x + 8, y: y + LINE, class: "title" }, box.title));
    box.lines.forEach((line, i) => {
      const shown = line.length > 60 ? `${line.slice(0, 59)}…` : line;
      group.append(el("text", { x: x + 8, y: y + LINE * (i + 2) + 2 }, shown));
    });
    svg.append(group);
  }
  into.replaceChildren(svg);
}
