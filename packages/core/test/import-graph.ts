/**
 * The import graph of a folder's sources, for the layer tests (src/layers.test.ts, src/store/layers.test.ts): every
 * relative import (static, dynamic, type-only or re-exported) resolved to a path inside the folder, and the import
 * circles of a graph.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, posix, relative } from "node:path";
import ts from "typescript";

/** The `.ts` sources under `root` that are not tests (nor installed packages), by path inside it ("engine/check.ts"). */
export function sourcesUnder(root: string, dir = root): Map<string, string> {
  const files = new Map<string, string>();
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.name === "node_modules") continue;
    if (entry.isDirectory()) for (const [p, text] of sourcesUnder(root, path)) files.set(p, text);
    else if (entry.name.endsWith(".ts") && !entry.name.endsWith(".test.ts")) {
      files.set(relative(root, path).split("\\").join("/"), readFileSync(path, "utf8"));
    }
  }
  return files;
}

/** The files of `files` each file imports, by path; imports that leave the folder are left out. */
export function importGraph(files: Map<string, string>): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const [path, text] of files) {
    const targets = ts
      .preProcessFile(text, true, true)
      .importedFiles.map((f) => f.fileName)
      .filter((spec) => spec.startsWith("."))
      .map((spec) => posix.normalize(posix.join(posix.dirname(path), spec)))
      .filter((target) => !target.startsWith(".."));
    graph.set(path, targets);
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
