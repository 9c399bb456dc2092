/**
 * Layer tests over a folder's import graph, shared by every package of the workspace: the sources of a folder, every
 * import resolved to a path inside it (static, dynamic, type-only or re-exported) or to a workspace package's entry
 * ("@pemba/core/testing"), the import circles, and a table of layers by level that every import must follow.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, posix, relative, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

export interface Layer {
  name: string;
  /**
   * What the layer holds, by path inside the folder: a file ("open.ts"), a folder ("store/"), or a workspace
   * package's entry ("@pemba/core/testing"). `*` stands for any name of one path segment ("*.ts" is every file at
   * the top, "*\/testing/" every testing folder one level down). The most specific hold (the most characters that
   * are not `*`) wins.
   */
  holds: string[];
  what: string;
  /** The lower layers it may import, when not all of them (a layer always imports its own). */
  uses?: string[];
}

/** Layers by level, bottom first. Layers of one level side by side do not import each other. */
export type Levels = Layer[][];

/** Which files of a folder count: file endings, and folders to pass over (node_modules always is). */
export interface SourceOptions {
  extensions?: string[];
  skip?: string[];
}

/**
 * The sources under `root` that are not tests (`*.test.ts`), by path inside it ("engine/check.ts"): `.ts` files
 * unless `extensions` says otherwise.
 */
export function sourcesUnder(root: string, options: SourceOptions = {}): Map<string, string> {
  const extensions = options.extensions ?? [".ts"];
  const skip = new Set(["node_modules", ...(options.skip ?? [])]);
  const files = new Map<string, string>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      const inside = relative(root, path).split("\\").join("/");
      if (skip.has(entry.name) || skip.has(inside)) continue;
      if (entry.isDirectory()) walk(path);
      else if (extensions.some((e) => entry.name.endsWith(e)) && !entry.name.endsWith(".test.ts"))
        files.set(inside, readFileSync(path, "utf8"));
    }
  };
  walk(root);
  return files;
}

/** A workspace package's entry: `@pemba/` and a name, with an optional subpath. */
const WORKSPACE_ENTRY = /^@pemba\/[^/]+/;

/**
 * The files of `files` each file imports, by path, and the workspace package entries it imports, by specifier;
 * relative imports that leave the folder, and other packages, are left out.
 */
export function importGraph(files: Map<string, string>): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const [path, text] of files) {
    const specs = ts.preProcessFile(text, true, true).importedFiles.map((f) => f.fileName);
    const targets = [
      ...specs
        .filter((spec) => spec.startsWith("."))
        .map((spec) => posix.normalize(posix.join(posix.dirname(path), spec)))
        .filter((target) => !target.startsWith("..")),
      ...specs.filter((spec) => WORKSPACE_ENTRY.test(spec)),
    ];
    graph.set(path, [...new Set(targets)]);
  }
  return graph;
}

/** The import circles: every strongly connected set of files (Tarjan), each sorted, smallest first. */
export function cycles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const out: string[][] = [];
  const visit = (path: string) => {
    index.set(path, index.size);
    low.set(path, index.get(path)!);
    stack.push(path);
    for (const next of graph.get(path) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(path, Math.min(low.get(path)!, low.get(next)!));
      } else if (stack.includes(next)) low.set(path, Math.min(low.get(path)!, index.get(next)!));
    }
    if (low.get(path) !== index.get(path)) return;
    const component: string[] = [];
    let top: string;
    do {
      top = stack.pop()!;
      component.push(top);
    } while (top !== path);
    if (component.length > 1 || graph.get(path)?.includes(path)) out.push(component.sort());
  };
  for (const path of graph.keys()) if (!index.has(path)) visit(path);
  return out.sort((a, b) => a[0]!.localeCompare(b[0]!));
}

/** A hold as a test of a path: a folder holds what starts with it, a file or an entry only itself. */
function holdPattern(hold: string): RegExp {
  const body = hold.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, "[^/]*");
  return new RegExp(hold.endsWith("/") ? `^${body}` : `^${body}$`);
}

/** The rule a table of levels sets: which layer holds a path, and the imports that break the table. */
export class LayerTable {
  readonly #levels: Levels;
  readonly #level = new Map<string, number>();
  readonly #layers = new Map<string, Layer>();
  readonly #holds: { layer: string; pattern: RegExp; weight: number }[] = [];

  constructor(levels: Levels) {
    this.#levels = levels;
    levels.forEach((level, i) => {
      for (const layer of level) {
        if (this.#layers.has(layer.name)) throw new Error(`layer ${layer.name} named twice`);
        this.#layers.set(layer.name, layer);
        this.#level.set(layer.name, i);
        for (const hold of layer.holds)
          this.#holds.push({
            layer: layer.name,
            pattern: holdPattern(hold),
            weight: hold.replace(/\*/g, "").length,
          });
      }
    });
    for (const layer of this.#layers.values()) {
      for (const used of layer.uses ?? []) {
        const below = this.#level.get(used);
        if (below === undefined || below >= this.#level.get(layer.name)!)
          throw new Error(`layer ${layer.name} uses ${used}, which is not a layer below it`);
      }
    }
  }

  /** A path's layer: the layer of its most specific hold. */
  layerOf(path: string): string | undefined {
    let best: { layer: string; weight: number } | undefined;
    for (const hold of this.#holds) {
      if (hold.pattern.test(path) && (best === undefined || hold.weight > best.weight)) best = hold;
    }
    return best?.layer;
  }

  /** Whether a file of layer `from` may import one of layer `to`. */
  mayImport(from: string, to: string): boolean {
    if (from === to) return true;
    const uses = this.#layers.get(from)!.uses;
    return this.#level.get(to)! < this.#level.get(from)! && (uses === undefined || uses.includes(to));
  }

  /** `importer -> imported (layer -> layer)` for every import the table does not allow, and every file in no layer. */
  violations(graph: Map<string, string[]>): string[] {
    const out: string[] = [];
    for (const [path, targets] of graph) {
      const from = this.layerOf(path);
      if (from === undefined) {
        out.push(`${path}: in no layer`);
        continue;
      }
      for (const target of targets) {
        const to = this.layerOf(target);
        if (to === undefined || !this.mayImport(from, to))
          out.push(`${path} -> ${target} (${from} -> ${to})`);
      }
    }
    return out.sort();
  }

  /**
   * The table as a diagram, levels top first: each layer with what it holds and does, and the lower layers it may
   * import when not all of them.
   */
  diagram(): string {
    const width = Math.max(...[...this.#layers.keys()].map((n) => n.length)) + 2;
    const out: string[] = [];
    for (let i = this.#levels.length - 1; i >= 0; i--) {
      this.#levels[i]!.forEach((l, j) => {
        const level = j === 0 ? String(i) : "";
        out.push(`${level.padEnd(3)}${l.name.padEnd(width)}${l.holds.join(" ")}`);
        out.push(`${"".padEnd(3 + width)}${l.what}`);
        if (l.uses !== undefined) out.push(`${"".padEnd(3 + width)}imports only ${l.uses.join(", ")}`);
      });
    }
    return out.join("\n");
  }
}

export interface LayersSuite {
  /** The folder whose sources are checked. */
  root: string;
  levels: Levels;
  sources?: SourceOptions;
  /** At least this many files are read (a guard against checking an empty folder). */
  minFiles: number;
  /**
   * The name of the table's diagram in docs/ARCHITECTURE.md: the fenced block after the line
   * `<!-- NAME layers: TEST FILE -->` (the test file's path in the repository) must be the table's diagram.
   */
  diagram?: string;
}

const REPO = resolve(import.meta.dirname, "../../../..");
const ARCHITECTURE = join(REPO, "docs/ARCHITECTURE.md");

/**
 * The layer tests of one folder: every import follows the table (no file in no layer), no import circle (type-only
 * imports count), and the diagram in the docs is the table's.
 */
export function describeLayers(title: string, suite: LayersSuite): void {
  describe(title, () => {
    const table = new LayerTable(suite.levels);
    const graph = importGraph(sourcesUnder(suite.root, suite.sources));

    it("every import goes to the file's own layer or one below it", () => {
      expect(graph.size).toBeGreaterThanOrEqual(suite.minFiles);
      expect(table.violations(graph)).toEqual([]);
    });

    it("no import circle", () => {
      expect(cycles(graph)).toEqual([]);
    });

    const name = suite.diagram;
    if (name !== undefined) {
      it("docs/ARCHITECTURE.md shows these layers", () => {
        const testFile = relative(REPO, expect.getState().testPath!).split("\\").join("/");
        const marker = `<!-- ${name} layers: ${testFile} -->`;
        const text = readFileSync(ARCHITECTURE, "utf8");
        const start = text.indexOf(marker);
        expect(start, `docs/ARCHITECTURE.md has no line ${marker}`).toBeGreaterThan(0);
        const block = /```\n([\s\S]*?)\n```/.exec(text.slice(start))?.[1];
        expect(block, `the diagram after ${marker}, to paste:\n${table.diagram()}`).toBe(table.diagram());
      });
    }
  });
}
