/**
 * Test support for the outage tests of every runtime: JSON API calls that answer a status and a body whatever
 * happens, loops of requests that run until stopped and count what they were answered, and the paged read of what a
 * tenant stores. Runtime-neutral (fetch and timers only).
 */

/** An API answer; status 0 when no answer came (the connection failed or the deadline passed). */
export interface ApiAnswer {
  status: number;
  body: Record<string, unknown>;
}

/** Sends a JSON body to a path of the tenant API and answers its JSON. */
export type ApiCall = (path: string, body: unknown) => Promise<ApiAnswer>;

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Calls on `url`'s tenant `tenant` (`POST {url}/v1/tenants/{tenant}/{path}`) with a deadline: no answer within
 * `deadlineMs` is a hang, answered as status 0, as is a connection that fails.
 */
export function tenantApi(url: string, tenant = "t1", deadlineMs = 10_000): ApiCall {
  return async (path, body) => {
    try {
      const r = await fetch(`${url}/v1/tenants/${tenant}/${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(deadlineMs),
      });
      return { status: r.status, body: (await r.json()) as Record<string, unknown> };
    } catch (e) {
      return { status: 0, body: { error: String(e) } };
    }
  };
}

/** The reason of an error answer (its first detail's), or "". */
export const reasonOf = (a: ApiAnswer): string =>
  String((a.body.details as { reason?: string }[] | undefined)?.[0]?.reason ?? "");

/** A request the database could not serve: 503 ERROR_CODE_SQL_EXECUTION (gRPC UNAVAILABLE). */
export const isUnavailable = (a: ApiAnswer): boolean =>
  a.status === 503 && a.body.message === "ERROR_CODE_SQL_EXECUTION" && a.body.code === 14;

/** One loop of a load: a request, then a pause, until the load stops. */
export interface LoadLoop {
  /** What the loop sends ("write", "check"): answers are counted as `kind status`. */
  kind: string;
  /** Sends one request; `n` numbers the load's requests (over all its loops, from 0). */
  send: (n: number) => Promise<ApiAnswer>;
  /** Whether the answer is one the test allows (the loop's own tallies go here too); others are `unexpected`. */
  expected: (answer: ApiAnswer, n: number) => boolean;
  pauseMs: number;
}

export interface Load {
  /** Answers by `kind status` ("write 200": 41). */
  statuses: Map<string, number>;
  /** Answers not expected, as `kind status body` (the body cut at 300 characters). */
  unexpected: string[];
  /** Stops every loop and waits for their requests in flight. */
  stop(): Promise<void>;
}

/** Starts the loops, each running on its own until `stop`. */
export function startLoad(loops: LoadLoop[]): Load {
  const statuses = new Map<string, number>();
  const unexpected: string[] = [];
  let running = true;
  let n = 0;
  const run = async (loop: LoadLoop) => {
    while (running) {
      const i = n++;
      const a = await loop.send(i);
      const key = `${loop.kind} ${a.status}`;
      statuses.set(key, (statuses.get(key) ?? 0) + 1);
      if (!loop.expected(a, i)) unexpected.push(`${key} ${JSON.stringify(a.body).slice(0, 300)}`);
      await sleep(loop.pauseMs);
    }
  };
  const runs = loops.map(run);
  return {
    statuses,
    unexpected,
    async stop() {
      running = false;
      await Promise.all(runs);
    },
  };
}

/** A loop of checks whose every answer must be an allowed decision. */
export const allowedChecks = (call: ApiCall, body: unknown, pauseMs = 20): LoadLoop => ({
  kind: "check",
  send: () => call("permissions/check", body),
  expected: (r) => r.status === 200 && r.body.can === "CHECK_RESULT_ALLOWED",
  pauseMs,
});

/** Every tuple a relationship read answers, page after page (`request` without its continuous token). */
export async function readAllTuples(
  call: ApiCall,
  request: Record<string, unknown>,
): Promise<{ entity: { id: string } }[]> {
  const tuples: { entity: { id: string } }[] = [];
  let token = "";
  do {
    const page = await call("data/relationships/read", { ...request, continuous_token: token });
    if (page.status !== 200)
      throw new Error(`relationships/read answered ${page.status}: ${JSON.stringify(page.body)}`);
    tuples.push(...(page.body.tuples as { entity: { id: string } }[]));
    token = String(page.body.continuous_token ?? "");
  } while (token !== "");
  return tuples;
}
