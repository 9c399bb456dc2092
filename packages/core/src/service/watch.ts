/** The change feed as a stream of transactions, polling the store until aborted. */
import type { DataChange, Snap, Store } from "../store/store.ts";
import { encodeSnapToken } from "./snap-token.ts";

export interface WatchBatch {
  snapToken: string;
  changes: DataChange[];
}

/** Each change set with snap > `after`, oldest first, one batch per transaction; polls every `pollMs` (250). */
export async function* watchChanges(
  store: Store,
  tenantId: string,
  after: Snap,
  opts: { signal?: AbortSignal; pollMs?: number; batch?: number } = {},
): AsyncGenerator<WatchBatch> {
  const pollMs = opts.pollMs ?? 250;
  while (!opts.signal?.aborted) {
    const sets = await store.changes(tenantId, after, opts.batch ?? 100);
    for (const set of sets) {
      after = set.snap;
      yield { snapToken: encodeSnapToken(set.snap), changes: set.changes };
    }
    if (sets.length === 0) await sleep(pollMs, opts.signal);
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}
