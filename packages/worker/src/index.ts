/**
 * The Worker module wrangler.toml deploys: the handlers (handler.ts) over the module's env, so the isolate builds
 * its store and app while the module is evaluated (at isolate start, before its first request) where that needs no
 * I/O. Benchmarks run this module as it is: D1's latency is added around the D1 binding by PEMBA_D1_SIMULATE.
 */
import { env } from "cloudflare:workers";
import { createWorker } from "./handler.ts";

// workerd takes every export of the main module for an entrypoint: the default one only (the rest is in handler.ts)
export type { WorkerConfig, WorkerEnv, WorkerExecutionContext, WorkerHandlers } from "./handler.ts";

export default createWorker(env as never);
