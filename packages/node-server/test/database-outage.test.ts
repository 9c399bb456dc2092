/**
 * PostgreSQL goes away under load and comes back: three `pemba serve` instances on one real PostgreSQL, writes and
 * token-less checks on every instance throughout, and a watch stream open on one of them, while the database is
 * stopped with `pg_ctl stop -m immediate` and started again 5 times, then kept down for 30 s.
 *
 * Every acknowledged write is stored afterwards; no write refused before it reached the database (503, connection
 * refused or the database starting up) is; checks without a snap token go on being answered from the replica; a
 * request that needs the database answers 503 ERROR_CODE_SQL_EXECUTION ("database unavailable: ...") at once, never
 * a 500 or a hang; the instances, their LISTEN connections and the watch stream recover without a restart.
 */
import {
  type ApiAnswer,
  allowedChecks,
  isUnavailable,
  type LoadLoop,
  readAllTuples,
  reasonOf,
  sleep,
  startLoad,
  tenantApi,
} from "@pemba/core/testing";
import { type PostgresServer, startPostgres } from "@pemba/core/testing/node";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningServer, startServer } from "../src/index.ts";
import { checkBody, tuple, writeSchema } from "./api-client.ts";

let pg: PostgresServer;
const servers: RunningServer[] = [];

beforeAll(async () => {
  pg = await startPostgres();
  for (let i = 0; i < 3; i++)
    servers.push(
      await startServer({
        database: pg.url,
        host: "127.0.0.1",
        port: 0,
        // what an instance learns of the others' writes comes from notices (LISTEN), which must come back too
        replicaRefreshMs: 0,
        logger: pino({ level: "silent" }),
      }),
    );
});
afterAll(async () => {
  for (const s of servers) await s.close();
  await pg?.stop();
});

/** A request on tenant t1 of the instance at `url`, with a 10 s deadline (no answer in time is status 0). */
const call = (url: string, path: string, body: unknown) => tenantApi(url)(path, body);

/** A write refused before any statement ran: the database refused the connection or was not up yet. */
const refusedBeforeSent = (a: ApiAnswer) => /ECONNREFUSED|starting up|shutting down|57P03/.test(reasonOf(a));

describe("PostgreSQL outages under load, three instances", () => {
  it("5 immediate stops and starts, then 30 s down: acknowledged writes kept, refused ones absent, checks answered, recovery without restart", async () => {
    await writeSchema(servers[0]!.url);
    const first = await call(servers[0]!.url, "data/write", {
      metadata: {},
      tuples: [tuple("document:base", "viewer", "user:base")],
    });
    expect(first.status).toBe(200);
    // every instance has the schema and the first tuple in its replica before the database goes
    for (const s of servers) {
      const r = await call(s.url, "permissions/check", {
        ...checkBody("document:base", "view", "user:base"),
        metadata: { snap_token: first.body.snap_token, depth: 20 },
      });
      expect(r.body.can).toBe("CHECK_RESULT_ALLOWED");
    }

    // a watch stream on instance 2, from the first write on
    const watchAbort = new AbortController();
    const watched: string[] = [];
    const watch = await fetch(`${servers[2]!.url}/v1/tenants/t1/watch`, {
      method: "POST",
      body: JSON.stringify({ snap_token: first.body.snap_token }),
      signal: watchAbort.signal,
    });
    expect(watch.status).toBe(200);
    const watching = (async () => {
      const reader = watch.body!.getReader();
      let text = "";
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) return "ended";
          text += new TextDecoder().decode(value);
          const lines = text.split("\n");
          text = lines.pop()!;
          watched.push(...lines.filter(Boolean));
        }
      } catch {
        return "aborted";
      }
    })();

    const acked = new Set<string>();
    const refused = new Set<string>();
    const unknownOutcome = new Set<string>();
    const writer = (s: RunningServer, i: number): LoadLoop => ({
      kind: "write",
      send: (n) =>
        call(s.url, "data/write", {
          metadata: {},
          tuples: [tuple(`document:w${i}-${n}`, "viewer", "user:1")],
        }),
      expected: (r, n) => {
        const id = `w${i}-${n}`;
        if (r.status === 200) acked.add(id);
        else if (!isUnavailable(r)) return false;
        else if (refusedBeforeSent(r)) refused.add(id);
        else unknownOutcome.add(id);
        return true;
      },
      pauseMs: 40,
    });
    const reader = (s: RunningServer) =>
      allowedChecks(tenantApi(s.url), checkBody("document:base", "view", "user:base"));
    const load = startLoad([...servers.map(writer), ...servers.map(reader)]);

    await sleep(1000);
    for (let round = 0; round < 5; round++) {
      await pg.kill();
      await sleep(2000);
      await pg.restart();
      await sleep(3000);
    }
    await pg.kill();
    await sleep(30_000);
    await pg.restart();
    const back = performance.now();
    // full service: every instance acknowledges a write, and every instance answers it with its token
    const recovered: number[] = [];
    for (const [i, s] of servers.entries()) {
      for (;;) {
        const r = await call(s.url, "data/write", {
          metadata: {},
          tuples: [tuple(`document:back${i}`, "viewer", "user:back")],
        });
        if (r.status === 200) {
          for (const other of servers) {
            for (;;) {
              const c = await call(other.url, "permissions/check", {
                ...checkBody(`document:back${i}`, "view", "user:back"),
                metadata: { snap_token: r.body.snap_token, depth: 20 },
              });
              if (c.body.can === "CHECK_RESULT_ALLOWED") break;
              await sleep(100);
            }
          }
          break;
        }
        await sleep(100);
      }
      recovered.push((performance.now() - back) / 1000);
    }
    // the watch stream, open all along, carries a write made after the database came back
    for (;;) {
      if (watched.some((l) => l.includes('"back2"'))) break;
      if (performance.now() - back > 30_000) break;
      await sleep(100);
    }
    const watchSeconds = (performance.now() - back) / 1000;
    // LISTEN is back: an instance's replica learns of another's write from the notice (its timer is off)
    const notice = await call(servers[0]!.url, "data/write", {
      metadata: {},
      tuples: [tuple("document:notice", "viewer", "user:notice")],
    });
    expect(notice.status).toBe(200);
    let noticed = false;
    for (let i = 0; i < 100 && !noticed; i++) {
      const c = await call(
        servers[1]!.url,
        "permissions/check",
        checkBody("document:notice", "view", "user:notice"),
      );
      noticed = c.body.can === "CHECK_RESULT_ALLOWED";
      if (!noticed) await sleep(100);
    }
    await load.stop();
    watchAbort.abort();
    expect(await watching).toBe("aborted");

    // what is stored: every page of the tenant's viewer tuples, read at the snap of a write made after every
    // writer stopped (a read at instance 0's head could miss the last writes of the other instances until their
    // notices arrive: that is freshness, not loss)
    const last = await call(servers[0]!.url, "data/write", {
      metadata: {},
      tuples: [tuple("document:final", "viewer", "user:final")],
    });
    expect(last.status).toBe(200);
    const stored = new Set(
      (
        await readAllTuples(tenantApi(servers[0]!.url), {
          metadata: { snap_token: last.body.snap_token },
          filter: { entity: { type: "document" }, relation: "viewer" },
          page_size: 1000,
        })
      ).map((t) => t.entity.id),
    );

    console.log(
      `database outages: ${[...load.statuses].map(([k, v]) => `${k}: ${v}`).join(", ")}; writes acknowledged ${acked.size}, refused before sent ${refused.size}, cut in flight ${unknownOutcome.size} (of which stored ${[...unknownOutcome].filter((id) => stored.has(id)).length}); seconds from the database's return to full service per instance ${recovered.map((s) => s.toFixed(1)).join(", ")}, watch ${watchSeconds.toFixed(1)}`,
    );
    expect(load.unexpected.slice(0, 5)).toEqual([]);
    expect([...acked].filter((id) => !stored.has(id))).toEqual([]);
    expect([...refused].filter((id) => stored.has(id))).toEqual([]);
    expect(refused.size).toBeGreaterThan(0);
    expect(watched.some((l) => l.includes('"back2"'))).toBe(true);
    expect(noticed).toBe(true);
  }, 180_000);
});
