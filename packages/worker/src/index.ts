/**
 * The Worker module wrangler.toml deploys: the handlers (handler.ts) over the module's env, so the isolate builds
 * its store and app while the module is evaluated (at isolate start, before its first request) where that needs no
 * I/O. Tools that wrap the env (loadtest/worker-edge) use `createWorker` from `@pemba/worker/handler` instead.
 */
import { env } from "cloudflare:workers";
import { createWorker } from "./handler.ts";

// workerd takes every export of the main module for an entrypoint: the default one only (the rest is in handler.ts)
export type { WorkerConfig, WorkerEnv, WorkerExecutionContext, WorkerHandlers } from "./handler.ts";

export default createWorker(env as never);
