/**
 * Read-your-writes over the HTTP API, for deployments whose reads go to replicas: writers each write a new tuple
 * and at once check it and read it back with the write's snap token (the hardest case for a replica that lags),
 * while a reader re-checks earlier writes with their tokens. Any answer that misses the write is stale.
 */

import type { SqldReplicaSet } from "./sqld-replicas.ts";

/** Anything that answers a Request: an app's fetch, or fetch() against a served URL. */
export type Fetcher = (request: Request) => Response | Promise<Response>;

export const TOKEN_READS_SCHEMA = `entity user {}
entity doc {
  relation viewer @user
  permission view = viewer
}`;

export interface TokenReadsResult {
  /** Writes made (each a new tuple). */
  writes: number;
  /** Checks and relationship reads sent with a write's token. */
  reads: number;
  /** Of those, answers that did not see the write. */
  stale: number;
  /** Non-2xx answers, with their bodies (none expected). */
  errors: string[];
}

async function post(fetcher: Fetcher, base: string, path: string, body: unknown, key?: string) {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (key !== undefined) headers.authorization = `Bearer ${key}`;
  const res = await fetcher(
    new Request(`${base}${path}`, { method: "POST", headers, body: JSON.stringify(body) }),
  );
  const text = await res.text();
  return { ok: res.ok, status: res.status, text, json: () => JSON.parse(text) as Record<string, unknown> };
}

/** Writes the test schema to the tenant (created when missing). */
export async function prepareTokenReads(fetcher: Fetcher, base: string, tenant: string, key?: string) {
  await post(fetcher, base, "/v1/tenants/create", { id: tenant, name: tenant }, key);
  const res = await post(
    fetcher,
    base,
    `/v1/tenants/${tenant}/schemas/write`,
    { schema: TOKEN_READS_SCHEMA },
    key,
  );
  if (!res.ok) throw new Error(`schema write failed: ${res.status} ${res.text}`);
}

export interface TokenReadsOptions {
  fetch: Fetcher;
  base: string;
  tenant: string;
  /** Names the docs written: `<prefix>-<writer>-<round>`. */
  prefix: string;
  writers: number;
  rounds: number;
  key?: string;
}

/**
 * `writers` loops of `rounds` writes each on doc `<prefix>-<writer>-<round>`; after each write, a check and a
 * relationship read with its token, and a check of an earlier write of the same loop with that write's token.
 */
export async function runTokenReads(opts: TokenReadsOptions): Promise<TokenReadsResult> {
  const { fetch: fetcher, base, tenant, prefix, key } = opts;
  const result: TokenReadsResult = { writes: 0, reads: 0, stale: 0, errors: [] };
  const check = async (doc: string, user: string, token: string) => {
    const res = await post(
      fetcher,
      base,
      `/v1/tenants/${tenant}/permissions/check`,
      {
        metadata: { snap_token: token, schema_version: "", depth: 20 },
        entity: { type: "doc", id: doc },
        permission: "view",
        subject: { type: "user", id: user },
      },
      key,
    );
    result.reads++;
    if (!res.ok) result.errors.push(`check ${res.status} ${res.text}`);
    else if (res.json().can !== "CHECK_RESULT_ALLOWED") result.stale++;
  };
  const readBack = async (doc: string, token: string) => {
    const res = await post(
      fetcher,
      base,
      `/v1/tenants/${tenant}/data/relationships/read`,
      { metadata: { snap_token: token }, filter: { entity: { type: "doc", ids: [doc] } }, page_size: 10 },
      key,
    );
    result.reads++;
    if (!res.ok) result.errors.push(`read ${res.status} ${res.text}`);
    else if (((res.json().tuples as unknown[] | undefined) ?? []).length !== 1) result.stale++;
  };
  const writer = async (w: number) => {
    const written: { doc: string; user: string; token: string }[] = [];
    for (let round = 0; round < opts.rounds; round++) {
      const doc = `${prefix}-${w}-${round}`;
      const user = `u${w}-${round}`;
      const res = await post(
        fetcher,
        base,
        `/v1/tenants/${tenant}/data/write`,
        {
          metadata: { schema_version: "" },
          tuples: [
            { entity: { type: "doc", id: doc }, relation: "viewer", subject: { type: "user", id: user } },
          ],
        },
        key,
      );
      if (!res.ok) {
        result.errors.push(`write ${res.status} ${res.text}`);
        continue;
      }
      result.writes++;
      const token = String(res.json().snap_token);
      written.push({ doc, user, token });
      await check(doc, user, token);
      await readBack(doc, token);
      const earlier = written[(round * 7) % written.length]!;
      await check(earlier.doc, earlier.user, earlier.token);
    }
  };
  await Promise.all(Array.from({ length: opts.writers }, (_, w) => writer(w)));
  return result;
}

/**
 * Runs token reads in small batches (doc prefix `<prefix><batch>`, 50 ms apart) until `done()` holds, as when a
 * restarted replica must serve reads again; every batch must read every write (no stale answer, no error).
 * `afterBatch` runs after each, with its prefix (e.g. waiting for replay). Throws after 100 batches. Returns the
 * batches and writes made.
 */
export async function tokenReadsUntil(
  opts: TokenReadsOptions & { done(): boolean; afterBatch?(prefix: string): Promise<void> },
): Promise<{ batches: number; writes: number }> {
  let writes = 0;
  let batch = 0;
  for (; !opts.done(); batch++) {
    if (batch >= 100) throw new Error(`still not done after ${batch} batches of token reads`);
    await new Promise((wake) => setTimeout(wake, 50));
    const prefix = `${opts.prefix}${batch}`;
    const result = await runTokenReads({ ...opts, prefix });
    if (result.stale > 0 || result.errors.length > 0)
      throw new Error(`token reads ${prefix}: ${result.stale} stale, errors: ${result.errors.join("; ")}`);
    writes += result.writes;
    await opts.afterBatch?.(prefix);
  }
  return { batches: batch, writes };
}

export interface ReplicaRestartReads {
  /** Writes and reads while every server runs. */
  running: TokenReadsResult;
  /** Requests the nearest replica was sent by then. */
  nearestSent: number;
  /** While the nearest replica is stopped (it is killed as this phase starts). */
  down: TokenReadsResult;
  /** Once it is started again on its data. */
  up: TokenReadsResult;
  /** Batches until the restarted replica was sent requests again, and their writes. */
  again: { batches: number; writes: number };
}

/**
 * Read-your-writes through a server over an sqld replica set (`record` on) while writes run, while the nearest
 * replica is stopped and after it starts again: 3 writers, `rounds.running` rounds, then `rounds.restart` rounds in
 * each of the other two phases, then small batches until the restarted replica is sent requests again.
 */
export async function tokenReadsThroughRestart(
  fetcher: Fetcher,
  base: string,
  tenant: string,
  set: SqldReplicaSet,
  rounds: { running: number; restart: number },
): Promise<ReplicaRestartReads> {
  const phase = (prefix: string, n: number) =>
    runTokenReads({ fetch: fetcher, base, tenant, prefix, writers: 3, rounds: n });
  await prepareTokenReads(fetcher, base, tenant);
  const nearest = set.seen[0]!;
  const running = await phase("a", rounds.running);
  const nearestSent = nearest.requests().length;
  const stopping = set.replicas[0]!.kill();
  const down = await phase("b", rounds.restart);
  await stopping;
  await set.replicas[0]!.restart();
  const up = await phase("c", rounds.restart);
  const before = nearest.requests().length;
  const again = await tokenReadsUntil({
    fetch: fetcher,
    base,
    tenant,
    prefix: "d",
    writers: 1,
    rounds: 2,
    done: () => nearest.requests().length > before,
  });
  return { running, nearestSent, down, up, again };
}
