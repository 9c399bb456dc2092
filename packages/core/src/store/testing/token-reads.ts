/**
 * Read-your-writes over the HTTP API, for deployments whose reads go to replicas: writers each write a new tuple
 * and at once check it and read it back with the write's snap token (the hardest case for a replica that lags),
 * while a reader re-checks earlier writes with their tokens. Any answer that misses the write is stale.
 */

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

/**
 * `writers` loops of `rounds` writes each on doc `<prefix>-<writer>-<round>`; after each write, a check and a
 * relationship read with its token, and a check of an earlier write of the same loop with that write's token.
 */
export async function runTokenReads(opts: {
  fetch: Fetcher;
  base: string;
  tenant: string;
  prefix: string;
  writers: number;
  rounds: number;
  key?: string;
}): Promise<TokenReadsResult> {
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
