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

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

/** A request with a deadline: no answer within 10 s is a hang (status 0). */
async function call(url: string, path: string, body: unknown): Promise<Answer> {
  try {
    const r = await fetch(`${url}/v1/tenants/t1/${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    });
    return { status: r.status, body: (await r.json()) as Record<string, unknown> };
  } catch (e) {
    return { status: 0, body: { error: String(e) } };
  }
}

const reasonOf = (a: Answer) =>
  String((a.body.details as { reason?: string }[] | undefined)?.[0]?.reason ?? "");
/** A write refused before any statement ran: the database refused the connection or was not up yet. */
const refusedBeforeSent = (a: Answer) => /ECONNREFUSED|starting up|shutting down|57P03/.test(reasonOf(a));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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
    const statuses = new Map<string, number>();
    const unexpected: string[] = [];
    const count = (key: string) => statuses.set(key, (statuses.get(key) ?? 0) + 1);
    let running = true;
    let n = 0;
    const writer = async (s: RunningServer, i: number) => {
      while (running) {
        const id = `w${i}-${n++}`;
        const r = await call(s.url, "data/write", {
          metadata: {},
          tuples: [tuple(`document:${id}`, "viewer", "user:1")],
        });
        count(`write ${r.status}`);
        if (r.status === 200) acked.add(id);
        else if (r.status === 503 && r.body.message === "ERROR_CODE_SQL_EXECUTION" && r.body.code === 14) {
          if (refusedBeforeSent(r)) refused.add(id);
          else unknownOutcome.add(id);
        } else unexpected.push(`write ${r.status} ${JSON.stringify(r.body)}`);
        await sleep(40);
      }
    };
    const reader = async (s: RunningServer) => {
      while (running) {
        const r = await call(s.url, "permissions/check", checkBody("document:base", "view", "user:base"));
        count(`check ${r.status}`);
        if (r.status !== 200 || r.body.can !== "CHECK_RESULT_ALLOWED")
          unexpected.push(`check ${r.status} ${JSON.stringify(r.body)}`);
        await sleep(20);
      }
    };
    const load = [...servers.map(writer), ...servers.map(reader)];

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
    running = false;
    await Promise.all(load);
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
    const stored = new Set<string>();
    let token = "";
    do {
      const page = await call(servers[0]!.url, "data/relationships/read", {
        metadata: { snap_token: last.body.snap_token },
        filter: { entity: { type: "document" }, relation: "viewer" },
        page_size: 1000,
        continuous_token: token,
      });
      expect(page.status).toBe(200);
      for (const t of page.body.tuples as { entity: { id: string } }[]) stored.add(t.entity.id);
      token = page.body.continuous_token as string;
    } while (token);

    console.log(
      `database outages: ${[...statuses].map(([k, v]) => `${k}: ${v}`).join(", ")}; writes acknowledged ${acked.size}, refused before sent ${refused.size}, cut in flight ${unknownOutcome.size} (of which stored ${[...unknownOutcome].filter((id) => stored.has(id)).length}); seconds from the database's return to full service per instance ${recovered.map((s) => s.toFixed(1)).join(", ")}, watch ${watchSeconds.toFixed(1)}`,
    );
    expect(unexpected.slice(0, 5)).toEqual([]);
    expect([...acked].filter((id) => !stored.has(id))).toEqual([]);
    expect([...refused].filter((id) => stored.has(id))).toEqual([]);
    expect(refused.size).toBeGreaterThan(0);
    expect(watched.some((l) => l.includes('"back2"'))).toBe(true);
    expect(noticed).toBe(true);
  }, 180_000);
});
