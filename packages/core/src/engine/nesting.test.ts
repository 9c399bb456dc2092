import { describe, expect, it } from "vitest";
import { check } from "./check.ts";
import { MAX_NESTING } from "./evaluation/evaluation.ts";
import { lookupEntity } from "./lookup-entity.ts";
import { lookupSubject } from "./lookup-subject.ts";
import { fixture } from "./testing.ts";

const SCHEMA = `
entity user {}
entity folder {
  relation parent @folder
  relation owner @user
  permission view = owner or parent.view
}`;

/** folder:0 → folder:1 → ... → folder:hops, owned by user:1. */
async function chain(hops: number) {
  const tuples = [];
  for (let i = 0; i < hops; i++) tuples.push(`folder:${i}#parent@folder:${i + 1}`);
  tuples.push(`folder:${hops}#owner@user:1`);
  return fixture(SCHEMA, tuples);
}

const user1 = { type: "user", id: "1", relation: "" };
const depthNotEnough = { code: "ERROR_CODE_DEPTH_NOT_ENOUGH", grpcCode: 3 };

describe("nesting is bounded by MAX_NESTING, not by the JS stack", () => {
  it("a chain within MAX_NESTING answers with a large depth", async () => {
    const f = await chain(MAX_NESTING - 10);
    expect(await f.can("folder:0", "view", "user:1", { depth: 100_000 })).toBe(true);
    expect(await f.can("folder:0", "view", "user:2", { depth: 100_000 })).toBe(false);
  });

  it("a 4,000-hop chain answers DEPTH_NOT_ENOUGH, not a stack overflow, from check and the lookups", async () => {
    const f = await chain(4000);
    const target = f.target({ depth: 100_000 });
    const folder0 = { type: "folder", id: "0" };
    await expect(
      Promise.resolve().then(() =>
        check(f.compiled, target, { entity: folder0, permission: "view", subject: user1 }),
      ),
    ).rejects.toMatchObject(depthNotEnough);
    await expect(
      lookupSubject(f.compiled, target, {
        entity: folder0,
        permission: "view",
        subjectReference: { type: "user", relation: "" },
        pageSize: 10,
      }),
    ).rejects.toMatchObject(depthNotEnough);
    await expect(
      lookupEntity(f.compiled, target, {
        entityType: "folder",
        permission: "view",
        subject: user1,
        pageSize: 10,
      }),
    ).rejects.toMatchObject(depthNotEnough);
    // folder:3500 is 500 hops from the owner: answered
    expect(await f.can("folder:3500", "view", "user:1", { depth: 100_000 })).toBe(true);
  });
});
