/**
 * CPU per check with tracing and the decision log on vs off, in ONE process, alternating short blocks so that a
 * shared machine's drift hits every variant alike (bench-http.ts --variants measures the same over HTTP, where a
 * busy machine's noise is larger than the differences). Each variant is the core app over one service and one
 * memory store with Permify's load-test data; a check goes through the app's request pipeline (`app.handle`, what
 * the Node server calls for a check), without the HTTP parser. Tracing uses the Node server's own setup (the
 * OpenTelemetry SDK, OTLP/HTTP export to a receiver in this process that drops what it gets); the decision log its
 * file sink. Each block ends with the variant's pending work done (the log's flush, the span processor's export),
 * so that work counts for the block's checks.
 *
 *   node --experimental-strip-types --no-warnings loadtest/ab-observability.ts [--ids 2000] [--block 2000]
 *        [--rounds 30]
 */

import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import {
  type ApiRequest,
  createApp,
  MemoryStore,
  type Observability,
  PembaService,
  ROUTES,
} from "@pemba/core";
import { LOAD_TEST_SCHEMA, loadTestData } from "@pemba/core/testing";
import { createObservability } from "@pemba/node-server";

const { values } = parseArgs({
  options: {
    ids: { type: "string", default: "2000" },
    block: { type: "string", default: "2000" },
    rounds: { type: "string", default: "30" },
  },
});
const IDS = Number(values.ids);
const BLOCK = Number(values.block);
const ROUNDS = Number(values.rounds);

const sink = createServer((req, res) => {
  req.resume();
  req.on("end", () => res.end("{}"));
});
await new Promise<void>((done) => sink.listen(0, "127.0.0.1", done));
const otlp = `http://127.0.0.1:${(sink.address() as { port: number }).port}`;
const dir = mkdtempSync(join(tmpdir(), "pemba-ab-obs-"));

const store = new MemoryStore();
const service = new PembaService(store);
// the memory store starts with tenant t1
await service.writeSchema("t1", LOAD_TEST_SCHEMA);
const data = loadTestData(IDS);
await store.write("t1", { tuples: data.tuples, attributes: data.attributes });

const base = {
  decisionLogSampleRatio: 1,
  decisionLogDenials: true,
  decisionLogRedact: [],
  decisionLogMaxMb: 1024,
  decisionLogBuffer: 100_000,
};
const variants: { name: string; observability?: Observability & { close(): Promise<void> } }[] = [
  { name: "off" },
  // the same as off: how far two identical variants' figures differ on this machine
  { name: "off again" },
  {
    name: "trace 0%",
    observability: createObservability({ ...base, otelEndpoint: otlp, otelSampleRatio: 0 }, {}, {}),
  },
  {
    name: "trace 1%",
    observability: createObservability({ ...base, otelEndpoint: otlp, otelSampleRatio: 0.01 }, {}, {}),
  },
  {
    name: "trace 100%",
    observability: createObservability({ ...base, otelEndpoint: otlp, otelSampleRatio: 1 }, {}, {}),
  },
  {
    name: "log all",
    observability: createObservability({ ...base, decisionLog: join(dir, "d.ndjson") }, {}, {}),
  },
];
const apps = variants.map((v) => createApp({ service, observability: v.observability }));

/** The k6 script's request mix: content and interaction views of random pairs. */
function body(i: number): string {
  const type = i % 2 === 0 ? "content" : "interaction";
  const entity = (i * 7919) % IDS;
  const user = (i * 104_729) % IDS;
  return `{"metadata":{"snap_token":"","schema_version":"","depth":20},"entity":{"type":"${type}","id":"${entity}"},"permission":"view","subject":{"type":"user","id":"${user}","relation":""}}`;
}

function request(text: string): ApiRequest {
  return {
    method: "POST",
    header: () => undefined,
    text: () => Promise.resolve(text),
    param: (name) => (name === "tenant_id" ? "t1" : undefined),
  };
}

async function block(variant: number, offset: number): Promise<number> {
  const app = apps[variant]!;
  const start = process.cpuUsage();
  for (let i = 0; i < BLOCK; i++) {
    const answer = await app.handle(ROUTES.check, request(body(offset + i)))!;
    if (answer.status !== 200) throw new Error(`check answered ${answer.status}: ${String(answer.body)}`);
  }
  const o = variants[variant]!.observability;
  await o?.decisions?.flush();
  await (
    o?.tracing?.tracer as unknown as { _provider?: { forceFlush(): Promise<void> } } | undefined
  )?._provider?.forceFlush?.();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / BLOCK;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
// warm-up: every variant, twice
for (let w = 0; w < 2; w++) for (let v = 0; v < variants.length; v++) await block(v, w * BLOCK);
const costs = variants.map(() => [] as number[]);
const ratios = variants.map(() => [] as number[]);
for (let round = 0; round < ROUNDS; round++) {
  // each round in another order: no variant always follows the same one
  const order = variants.map((_, i) => (i + round) % variants.length);
  const perRound: number[] = [];
  for (const v of order) perRound[v] = await block(v, round * BLOCK);
  for (let v = 0; v < variants.length; v++) {
    costs[v]!.push(perRound[v]!);
    ratios[v]!.push(perRound[v]! / perRound[0]!);
  }
}
console.log(
  `${ROUNDS} rounds of ${BLOCK} checks per variant, ${IDS} ids (${data.tuples.length} tuples, ${data.attributes.length} attributes)`,
);
for (const [v, variant] of variants.entries()) {
  const q = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.floor(p * (xs.length - 1))]!;
  console.log(
    `${variant.name.padEnd(11)} CPU/check ${median(costs[v]!).toFixed(2)} us; vs off ${median(ratios[v]!).toFixed(3)}x ` +
      `(median of the rounds' ratios; quartiles ${q(ratios[v]!, 0.25).toFixed(3)}-${q(ratios[v]!, 0.75).toFixed(3)})`,
  );
}
for (const v of variants) await v.observability?.close();
sink.close();
rmSync(dir, { recursive: true, force: true });
