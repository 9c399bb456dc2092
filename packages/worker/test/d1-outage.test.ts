/**
 * D1 failing under the Worker: the shipped entry and wrangler.toml under `wrangler dev` (local D1), with half of
 * the write round trips failing as D1's can (PEMBA_D1_SIMULATE `fail=0.5`, around the binding: the batch runs with
 * a failing statement last, so D1 rolls it back, and the Worker hears D1's "Network connection lost").
 *
 * A refused write answers 503 ERROR_CODE_SQL_EXECUTION (gRPC UNAVAILABLE) with "database unavailable: ..." in its
 * details; nothing of it is stored or seen by the isolate's replica (nothing half-written); every acknowledged
 * write is stored whole; checks without a snap token go on being answered; the next write after a failure is
 * taken (no restart).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ApiAnswer, type ApiCall, isUnavailable, readAllTuples, reasonOf } from "@pemba/core/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startWranglerDev, type WranglerDev } from "../src/testing/wrangler-dev.ts";
import { checkBody, SCHEMA, tuple } from "./fixtures.ts";

const WRITES = 60;
const TUPLES_PER_WRITE = 20;

describe("D1 errors in workerd (shipped entry and wrangler.toml, local D1)", () => {
  const state = mkdtempSync(join(tmpdir(), "pemba-d1-outage-"));
  let w: WranglerDev;

  beforeAll(async () => {
    w = await startWranglerDev({ PEMBA_D1_SIMULATE: "fail=0.5" }, 120_000, state);
  });
  afterAll(async () => {
    await w?.close();
    rmSync(state, { recursive: true, force: true });
  });

  const call: ApiCall = async (path, body) => {
    const r = await w.call(`/v1/tenants/t1/${path}`, body);
    return { status: r.status, body: r.body as Record<string, unknown> };
  };
  const isRefusal = (a: ApiAnswer) =>
    isUnavailable(a) && /^database unavailable: (.* )?D1_ERROR: Network connection lost/.test(reasonOf(a));
  /** A write, sent again while D1 refuses it (each refusal stored nothing). */
  const writeUntilTaken = async (path: string, body: unknown): Promise<ApiAnswer> => {
    for (;;) {
      const r = await call(path, body);
      if (!isRefusal(r)) return r;
    }
  };

  it("refused writes answer 503 and leave nothing behind; taken ones are stored whole; checks answer throughout", async () => {
    const schema = await writeUntilTaken("schemas/write", { schema: SCHEMA });
    expect(schema.status, JSON.stringify(schema.body)).toBe(200);
    const base = await writeUntilTaken("data/write", {
      metadata: {},
      tuples: [tuple("document:base", "owner", "user:base")],
    });
    expect(base.status).toBe(200);

    const acked: number[] = [];
    const refused: number[] = [];
    const unexpected: string[] = [];
    let lastToken = String(base.body.snap_token);
    let checks = 0;
    let takenAfterRefusal = 0;
    let previousRefused = false;
    for (let i = 0; i < WRITES; i++) {
      const r = await call("data/write", {
        metadata: {},
        tuples: Array.from({ length: TUPLES_PER_WRITE }, (_, k) =>
          tuple(`document:w${i}-${k}`, "owner", `user:u${i}`),
        ),
      });
      if (r.status === 200) {
        acked.push(i);
        lastToken = String(r.body.snap_token);
        if (previousRefused) takenAfterRefusal++;
        previousRefused = false;
      } else if (isRefusal(r)) {
        refused.push(i);
        previousRefused = true;
      } else unexpected.push(`write ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
      // a check without a snap token between writes: answered from what the isolate holds
      const c = await call("permissions/check", checkBody("document:base", "edit", "user:base"));
      if (c.status === 200 && c.body.can === "CHECK_RESULT_ALLOWED") checks++;
      else unexpected.push(`check ${c.status} ${JSON.stringify(c.body).slice(0, 300)}`);
    }
    expect(unexpected).toEqual([]);
    expect(checks).toBe(WRITES);
    // fail=0.5 over 60 writes: both outcomes many times over
    expect(refused.length).toBeGreaterThanOrEqual(5);
    expect(acked.length).toBeGreaterThanOrEqual(5);
    expect(takenAfterRefusal).toBeGreaterThanOrEqual(1);

    // what is stored, read from D1 page by page (reads do not fail)
    const stored = new Map<string, number>();
    const tuples = await readAllTuples(call, {
      metadata: { snap_token: lastToken },
      filter: { entity: { type: "document", ids: [] }, relation: "owner" },
      page_size: 100,
    });
    for (const t of tuples) {
      const write = /^w(\d+)-/.exec(t.entity.id)?.[1];
      if (write !== undefined) stored.set(write, (stored.get(write) ?? 0) + 1);
    }
    for (const i of acked) expect(stored.get(String(i)), `write ${i} acknowledged`).toBe(TUPLES_PER_WRITE);
    for (const i of refused) expect(stored.get(String(i)), `write ${i} refused`).toBeUndefined();
    // the isolate's own copy saw no refused write either: checks at the last acknowledged write's snap token
    for (const i of refused.slice(0, 5)) {
      const c = await call("permissions/check", {
        ...checkBody(`document:w${i}-0`, "edit", `user:u${i}`),
        metadata: { snap_token: lastToken, depth: 20 },
      });
      expect(c.body.can, `write ${i} refused`).toBe("CHECK_RESULT_DENIED");
    }
    for (const i of acked.slice(0, 5)) {
      const c = await call("permissions/check", {
        ...checkBody(`document:w${i}-${TUPLES_PER_WRITE - 1}`, "edit", `user:u${i}`),
        metadata: { snap_token: lastToken, depth: 20 },
      });
      expect(c.body.can, `write ${i} acknowledged`).toBe("CHECK_RESULT_ALLOWED");
    }
    console.log(
      `D1 fail=0.5: ${WRITES} writes of ${TUPLES_PER_WRITE} tuples, ${acked.length} taken (all stored whole), ${refused.length} refused with 503 (none stored), ${checks} checks answered`,
    );
  }, 240_000);
});
