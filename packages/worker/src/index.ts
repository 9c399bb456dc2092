/**
 * The Worker module wrangler.toml deploys: the handlers (handler.ts) over the module's env, so the isolate builds
 * its store and app while the module is evaluated (at isolate start, before its first request) where that needs no
 * I/O. Tools that wrap the env (loadtest/worker-edge) use `createWorker` from `@pemba/worker/handler` instead.
 */
import { env } from "cloudflare:workers";
import { createWorker } from "./handler.ts";

export * from "./handler.ts";

export default createWorker(env as never);
