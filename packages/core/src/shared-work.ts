/**
 * Work whose promise more than one request may await: a tenant's catch-up or first look, a schema's load, a
 * replica's connection, a migration check.
 *
 * workerd has two rules about it (Node has neither, and installs nothing here):
 * - A promise settles only within the request that created it (compatibility flag
 *   `handle_cross_request_promise_resolution`): when that request ends first, the promise never settles. So the
 *   request that starts shared work stays until the work settles (`sharedWork`: its `ctx.waitUntil`).
 * - A request whose only pending wait is another request's work has no event of its own pending: the runtime
 *   cancels it as hung ("would never generate a response"), and the work settling does not wake it. So a request
 *   that joins another's work waits on timers of its own and looks whether the work has settled after each
 *   (`joinShared`); when it has not within the limit, the request does the work itself.
 */

export type KeepAlive = (work: Promise<unknown>) => void;

/** How long a request waits on another request's work before it does the work itself (workerd). */
export const SHARED_WAIT_LIMIT_MS = 15_000;

/**
 * The runtime's rule, set once per process or isolate by its entry (the Worker): it is the runtime's, not a
 * service's or a request's, so every service of the isolate follows it alike.
 */
const runtime: { keepAlive: KeepAlive | undefined; waitLimitMs: number } = {
  keepAlive: undefined,
  waitLimitMs: SHARED_WAIT_LIMIT_MS,
};

/**
 * Installs the runtime's hook (the Worker, once per isolate), and how long a request waits on another's work
 * (`joinShared`); `undefined` removes the hook.
 */
export function setSharedWorkKeeper(hook: KeepAlive | undefined, limitMs = SHARED_WAIT_LIMIT_MS): void {
  runtime.keepAlive = hook;
  runtime.waitLimitMs = limitMs;
}

/** `work`, kept alive by the request that starts it until it settles (see the module comment). */
export function sharedWork<T>(work: Promise<T>): Promise<T> {
  runtime.keepAlive?.(work.catch(() => {}));
  return work;
}

/**
 * Waits for `work` that another request may have started: its outcome, or, under workerd, `own()`'s when `work`
 * has not settled within `limitMs` (see the module comment). On Node, `work` itself.
 *
 * Under workerd, settling `work` in the request that started it does not wake this request: what the settlement
 * queues for it runs when this request next has an event of its own. So the wait is a series of short timers
 * (1 ms, doubling to at most 32 ms), each of which lets this request see whether `work` has settled.
 */
export function joinShared<T>(
  work: Promise<T>,
  own: () => Promise<T>,
  limitMs = runtime.waitLimitMs,
): Promise<T> {
  return runtime.keepAlive === undefined ? work : polled(work, own, limitMs);
}

async function polled<T>(work: Promise<T>, own: () => Promise<T>, limitMs: number): Promise<T> {
  let outcome: { value: T } | { error: unknown } | undefined;
  work.then(
    (value) => {
      outcome = { value };
    },
    (error: unknown) => {
      outcome = { error };
    },
  );
  const started = Date.now();
  for (let tick = 1; outcome === undefined; tick = Math.min(2 * tick, 32)) {
    if (Date.now() - started >= limitMs) return own();
    await new Promise((r) => setTimeout(r, tick));
  }
  const settled = outcome as { value: T } | { error: unknown };
  if ("error" in settled) throw settled.error;
  return settled.value;
}
