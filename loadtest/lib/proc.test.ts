import { describe, expect, it } from "vitest";
import { type RssSample, rssSlopePer10Minutes, rssSteps } from "./proc.ts";

/** One reading a second: `flat` MB, rising by `step` MB over 3 s from second `at`. */
function series(seconds: number, flat: number, at: number, step: number): RssSample[] {
  return Array.from({ length: seconds }, (_, s) => ({
    seconds: s,
    megabytes: flat + (s < at ? 0 : s >= at + 3 ? step : ((s - at + 1) * step) / 4),
  }));
}

describe("rssSteps", () => {
  it("finds one step where the RSS rises 11 MB within seconds, none on a flat series", () => {
    const readings = series(1800, 228, 1212, 11);
    expect(rssSteps(readings, 2, 10)).toEqual([{ seconds: 1211, from: 228, to: 239 }]);
    expect(rssSteps(series(600, 228, 0, 0), 2, 10)).toEqual([]);
  });

  it("a single step in a flat series reads as a slope over the window the least squares cover", () => {
    // flat at 228 MB, 11 MB more at minute 20: the 20-minute window's least squares read it as 8.2 MB per 10 minutes (1.5 x 11 MB / 20 min)
    const slope = rssSlopePer10Minutes(series(1800, 228, 1212, 11), 600);
    expect(slope.toFixed(1)).toBe("8.2");
  });
});
