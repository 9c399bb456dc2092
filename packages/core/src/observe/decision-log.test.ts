/**
 * DecisionLog: sampling, "always record denials", redaction, and the bounded buffer (a busy sink: records queue up
 * to the bound, the rest are dropped and counted, and nothing waits for the sink).
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  type DecisionFields,
  DecisionLog,
  type DecisionRecord,
  hashSubjectId,
  toNdjson,
} from "./decision-log.ts";

const fields = (n: number, decision = "CHECK_RESULT_ALLOWED"): DecisionFields => ({
  api: "check",
  tenant: "t1",
  principal: "key:0123abcd",
  subject: `user:u${n}#member`,
  permission: "view",
  entity: `document:${n}`,
  decision,
  snap_token: "snap",
  schema_version: "v1",
  check_count: 2,
  latency_ms: 0.5,
  trace_id: "",
  context: { tuples: [], attributes: [], data: { n } },
});

/** A log whose flushes run only when the test says (`flush()`), writing into `written`. */
function manualLog(opts: Partial<ConstructorParameters<typeof DecisionLog>[0]> = {}) {
  const written: DecisionRecord[][] = [];
  let scheduled: (() => void) | undefined;
  let drops = 0;
  const log = new DecisionLog({
    sink: (records) => {
      written.push(records);
    },
    schedule: (flush) => {
      scheduled = flush;
    },
    onDrop: () => drops++,
    clock: () => Date.UTC(2026, 10, 28, 9, 30, 0, 123),
    ...opts,
  });
  return { log, written, runScheduled: () => scheduled?.(), drops: () => drops };
}

describe("DecisionLog", () => {
  it("writes each record as one NDJSON line, fields in order, time from its clock", async () => {
    const { log, written } = manualLog();
    log.add(fields(1));
    await log.flush();
    expect(toNdjson(written[0]!)).toBe(
      '{"time":"2026-11-28T09:30:00.123Z","api":"check","tenant":"t1","principal":"key:0123abcd",' +
        '"subject":"user:u1#member","permission":"view","entity":"document:1","decision":"CHECK_RESULT_ALLOWED",' +
        '"snap_token":"snap","schema_version":"v1","check_count":2,"latency_ms":0.5,"trace_id":"",' +
        '"context":{"tuples":[],"attributes":[],"data":{"n":1}}}\n',
    );
  });

  it("samples by ratio; denials always unless turned off", () => {
    const draws = [0.05, 0.5, 0.05, 0.5];
    const random = () => draws.shift()!;
    for (const alwaysDenials of [true, false]) {
      draws.splice(0, draws.length, 0.05, 0.5, 0.05, 0.5);
      const { log } = manualLog({ sampleRatio: 0.1, alwaysDenials, random });
      const kept = [
        log.sampled("CHECK_RESULT_ALLOWED"),
        log.sampled("CHECK_RESULT_ALLOWED"),
        log.sampled("CHECK_RESULT_DENIED"),
        log.sampled("CHECK_RESULT_DENIED"),
      ];
      expect(kept).toEqual(alwaysDenials ? [true, false, true, true] : [true, false, true, false]);
    }
  });

  it("redaction: subject-id hashes the id with the tenant (relation kept); context is left out", async () => {
    const { log, written } = manualLog({ redact: ["subject-id", "context"] });
    log.add(fields(7));
    await log.flush();
    const digest = createHash("sha256").update("t1\u0000u7").digest("hex").slice(0, 16);
    expect(written[0]![0]!.subject).toBe(`user:sha256:${digest}#member`);
    expect(hashSubjectId("t1", "user:u7#member")).toBe(`user:sha256:${digest}#member`);
    expect(written[0]![0]).not.toHaveProperty("context");
  });

  it("a busy sink: records queue to the bound, the rest are dropped and counted; add never waits", async () => {
    let release: () => void = () => {};
    const batches: number[] = [];
    const { log, runScheduled, drops } = manualLog({
      bufferSize: 3,
      sink: (records) => {
        batches.push(records.length);
        return new Promise<void>((done) => {
          release = done;
        });
      },
    });
    for (let n = 0; n < 5; n++) log.add(fields(n));
    expect([log.pending, log.dropped, drops()]).toEqual([3, 2, 2]);
    runScheduled(); // the first write starts and stays in flight
    await Promise.resolve();
    expect(batches).toEqual([3]);
    for (let n = 0; n < 5; n++) log.add(fields(n));
    expect([log.pending, log.dropped, drops()]).toEqual([3, 4, 4]);
    release(); // the write ends: what queued meanwhile goes out next
    await new Promise((r) => setTimeout(r, 0));
    runScheduled();
    await Promise.resolve();
    expect(batches).toEqual([3, 3]);
    expect(log.written).toBe(6);
  });

  it("a failing sink loses its batch, is reported, and the log goes on", async () => {
    const errors: unknown[] = [];
    let fail = true;
    const seen: number[] = [];
    const { log } = manualLog({
      onError: (e) => errors.push(e),
      sink: (records) => {
        if (fail) throw new Error("disk full");
        seen.push(records.length);
      },
    });
    log.add(fields(1));
    await log.flush();
    fail = false;
    log.add(fields(2));
    await log.flush();
    expect(errors.map((e) => (e as Error).message)).toEqual(["disk full"]);
    expect(seen).toEqual([1]);
  });
});
