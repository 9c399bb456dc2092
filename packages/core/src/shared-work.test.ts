import { afterEach, describe, expect, it } from "vitest";
import { joinShared, setSharedWorkKeeper, sharedWork } from "./shared-work.ts";

afterEach(() => setSharedWorkKeeper(undefined));

const never = () => new Promise<string>(() => {});

describe("shared work (shared-work.ts)", () => {
  it("without a keeper (Node): sharedWork keeps nothing and joinShared is the work itself", async () => {
    const work = Promise.resolve("theirs");
    expect(sharedWork(work)).toBe(work);
    expect(joinShared(work, async () => "own")).toBe(work);
  });

  it("with a keeper (workerd): the work is handed to it once, with its rejection handled", async () => {
    const kept: Promise<unknown>[] = [];
    setSharedWorkKeeper((w) => kept.push(w));
    const failing = Promise.reject(new Error("boom"));
    expect(sharedWork(failing)).toBe(failing);
    await expect(failing).rejects.toThrow("boom");
    expect(kept).toHaveLength(1);
    await expect(kept[0]).resolves.toBeUndefined();
  });

  it("with a keeper: a joiner gets the work's value or error, without running its own", async () => {
    setSharedWorkKeeper(() => {});
    let own = 0;
    const ownWork = async () => {
      own++;
      return "own";
    };
    let settle!: (v: string) => void;
    const work = new Promise<string>((r) => {
      settle = r;
    });
    const joined = joinShared(work, ownWork);
    setTimeout(() => settle("theirs"), 20);
    expect(await joined).toBe("theirs");
    await expect(joinShared(Promise.reject(new Error("theirs failed")), ownWork)).rejects.toThrow(
      "theirs failed",
    );
    expect(own).toBe(0);
  });

  it("with a keeper: work that never settles is replaced by the joiner's own after the limit", async () => {
    setSharedWorkKeeper(() => {}, 30);
    let own = 0;
    const answer = await joinShared(never(), async () => {
      own++;
      return "own";
    });
    expect(answer).toBe("own");
    expect(own).toBe(1);
  });
});
