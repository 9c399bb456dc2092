/**
 * The workspace's packages depend on each other without a cycle (pnpm install warns about one, and a cycle has
 * no build order): dependencies and devDependencies on `workspace:` packages form a graph with no circle.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_DIR } from "../src/testing/cli-process.ts";

interface Manifest {
  name: string;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
}

function workspacePackages(): Manifest[] {
  const dirs = [...readdirSync(join(REPO_DIR, "packages")).map((d) => join("packages", d)), "loadtest"];
  return dirs.flatMap((dir) => {
    try {
      return [JSON.parse(readFileSync(join(REPO_DIR, dir, "package.json"), "utf8")) as Manifest];
    } catch {
      return []; // a folder without a package
    }
  });
}

/** The cycles of a graph, each as the path that closes it (a -> b -> a). */
function cycles(edges: Map<string, string[]>): string[] {
  const found: string[] = [];
  const visit = (node: string, path: string[]) => {
    for (const next of edges.get(node) ?? []) {
      const at = path.indexOf(next);
      if (at >= 0) found.push([...path.slice(at), next].join(" -> "));
      else visit(next, [...path, next]);
    }
  };
  for (const node of edges.keys()) visit(node, [node]);
  return found;
}

describe("workspace dependencies", () => {
  it("no package depends on another that depends back on it (dependencies and devDependencies)", () => {
    const packages = workspacePackages();
    const edges = new Map(
      packages.map((p) => [
        p.name,
        Object.entries({ ...p.dependencies, ...p.devDependencies })
          .filter(([, version]) => version.startsWith("workspace:"))
          .map(([name]) => name),
      ]),
    );
    expect(edges.get("@pemba/node-server")).toContain("@pemba/console");
    expect(edges.get("@pemba/worker")).toContain("@pemba/console");
    expect(cycles(edges)).toEqual([]);
  });
});
