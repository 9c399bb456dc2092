/**
 * Watch over HTTP — a Pemba addition: Permify serves Watch only over gRPC (its gateway answers 404). The response
 * is newline-delimited JSON, one `{"changes":{"snap_token","data_changes":[...]}}` per transaction after the
 * request's snap token ("" = from now on), kept open (polling the store) until the client disconnects, the
 * server shuts down, or (D1) the Worker invocation has no query left for the next read: the response then ends
 * after its last full line, and the client reconnects with that line's snap token.
 */

import { WatchRequestSchema, WatchResponseSchema } from "../../wire/schema.ts";
import { attributeToWire, tupleToWire } from "../convert.ts";
import { ndjsonAnswer } from "../pipeline.ts";
import { ROUTES } from "../route-table.ts";
import type { AppDeps } from "./deps.ts";

export function registerWatchRoutes({ routes, service, watchPollMs }: AppDeps): void {
  routes.add(
    {
      route: ROUTES.watch,
      summary: "watch changes (Pemba: NDJSON over HTTP; Permify: gRPC only)",
      tag: "Watch",
      body: WatchRequestSchema,
      response: WatchResponseSchema,
    },
    async ({ body: r, req, tenantId }) => {
      // Resolve before streaming so a bad token is an HTTP error, and "" pins "now".
      const start = service.snapTokenOf(tenantId, await service.resolveSnap(tenantId, r.snap_token));
      const abort = new AbortController();
      req.signal?.addEventListener("abort", () => abort.abort(), { once: true });
      const encoder = new TextEncoder();
      // a stream over the limit is refused here, before the response starts
      const changes = await service.watch(tenantId, start, { signal: abort.signal, pollMs: watchPollMs });
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          const next = await changes.next();
          if (next.done) {
            controller.close();
            return;
          }
          const line = {
            changes: {
              snap_token: next.value.snapToken,
              data_changes: next.value.changes.map((ch) =>
                ch.tuple
                  ? { operation: ch.operation, tuple: tupleToWire(ch.tuple) }
                  : {
                      operation: ch.operation,
                      attribute: ch.attribute ? attributeToWire(ch.attribute) : null,
                    },
              ),
            },
          };
          controller.enqueue(encoder.encode(`${JSON.stringify(line)}\n`));
        },
        cancel() {
          abort.abort();
          void changes.return(undefined);
        },
      });
      return ndjsonAnswer(body);
    },
  );
}
