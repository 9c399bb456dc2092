/**
 * Keeps the event loop turning while the server is saturated, so that new connections are accepted.
 *
 * libuv (1.45+, Node 20+) accepts ONE connection per event-loop turn (libuv PR #3696: one accept() per readiness of
 * the listening socket), and a turn runs every request that became ready during it: the requests read in its poll
 * phase and every continuation that resumed in it (a JWT verified on the thread pool, a body that arrived). Under a
 * closed-loop load of hundreds of keep-alive clients (the zitadel soak: 600) a turn served all of them, 150-250 ms
 * on a 2-CPU machine, so the connections waiting in the kernel's accept queue were accepted at 4-7 per second: a
 * request on a new connection waited 5-60 s while the others were answered in half a second.
 *
 * `admit()` bounds the request work of one turn: a request's handler starts right away while the current turn has
 * spent less than `budgetMs` and nobody is waiting; otherwise it waits, first come first served, for a later turn's
 * check phase (setImmediate), which runs after that turn's poll phase (accept, new data, timers). Each waiting
 * request is resumed by an immediate of its own, so its continuation (and the microtasks it queues) runs to its next
 * real wait before the budget is looked at again.
 */

export interface TurnBudget {
  /** undefined: run now; a promise: run when it resolves. */
  admit(): Promise<void> | undefined;
}

/** Request work per event-loop turn (ms): a connection in the accept queue waits about this long per position. */
export const TURN_BUDGET_MS = 5;

export function createTurnBudget(budgetMs = TURN_BUDGET_MS, now = () => performance.now()): TurnBudget {
  const waiting: Array<(() => void) | undefined> = [];
  let head = 0;
  /** End of the current turn's budget; undefined until a request of this turn looks at it. */
  let deadline: number | undefined;
  const endTurn = () => {
    deadline = undefined;
  };
  const hasBudget = (): boolean => {
    if (deadline === undefined) {
      deadline = now() + budgetMs;
      // runs in this turn's check phase, before the waiting requests' immediates queued after it
      setImmediate(endTurn);
      return true;
    }
    return now() < deadline;
  };
  const resumeFirst = () => {
    if (!hasBudget()) {
      setImmediate(resumeFirst); // the next turn
      return;
    }
    const resume = waiting[head]!;
    waiting[head++] = undefined;
    if (head === waiting.length) {
      waiting.length = 0;
      head = 0;
    }
    resume();
  };
  return {
    admit() {
      if (head === waiting.length && hasBudget()) return undefined;
      return new Promise<void>((resolve) => {
        waiting.push(resolve);
        setImmediate(resumeFirst);
      });
    },
  };
}
