import { describe, expect, it } from "vitest";
import { flameGraphSvg } from "./flamegraph.ts";

const frame = (id: number, functionName: string, children: number[] = [], url = "") => ({
  id,
  callFrame: { functionName, url, lineNumber: 9 },
  children,
});

describe("flameGraphSvg", () => {
  it("sizes each frame by its time with its callees, idle left out", () => {
    const profile = {
      nodes: [
        frame(1, "(root)", [2, 4]),
        frame(2, "handle", [3], "file:///x/packages/core/src/http/app.ts"),
        frame(3, "evaluate"),
        frame(4, "(idle)"),
      ],
      // 3 samples in handle itself, 1 in evaluate, 6 idle; 10 ms apart
      samples: [2, 2, 3, 2, 4, 4, 4, 4, 4, 4],
      timeDeltas: Array(10).fill(10_000),
    };
    const svg = flameGraphSvg(profile, "t");
    expect(svg).toContain("0.04 s busy of 0.10 s sampled");
    expect(svg).toContain("<title>handle packages/core/src/http/app.ts:10 (40.0 ms, 100.00%)</title>");
    expect(svg).toMatch(
      /<title>evaluate {2}\(10\.0 ms, 25\.00%\)<\/title><rect x="0\.00" y="\d+" width="300\.00"/,
    );
    expect(svg).not.toContain("(idle)");
  });
});
