/**
 * PROTOCOL DOUBLE, not a database server: a minimal stand-in for sqld/Turso that speaks Hrana 2 over HTTP
 * (`POST /v2/pipeline`, JSON) in front of a node:sqlite database, for tests only. No real sqld can run here
 * (offline, and no npm package ships one).
 *
 * Hrana 2 is what the project's client speaks: @libsql/client 0.18 opens HTTP (`libsql://`, `https://`) and
 * WebSocket (`wss://`) connections through @libsql/hrana-client 0.10 with its default protocol version 2 (openHttp
 * and openWs are called without a version), and that hrana-client ships Hrana 3 over HTTP only in its protobuf
 * encoding (`/v3-protobuf`; the JSON `/v3` endpoint is commented out in its http/client.js). So the client never
 * asks for `/v3`; the double answers 404 to any Hrana 3 path, and records every request line so a test notices
 * when a client upgrade starts using another protocol (libsql.test.ts pins this).
 *
 * Implements execute, batch (with step conditions), sequence, store_sql/close_sql, get_autocommit and close;
 * checks `Authorization: Bearer <token>`.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import { DatabaseSync, type SQLInputValue, type StatementSync } from "node:sqlite";

type HValue =
  | { type: "null" }
  | { type: "integer"; value: string }
  | { type: "float"; value: number }
  | { type: "text"; value: string }
  | { type: "blob"; base64: string };

interface HStmt {
  sql?: string;
  sql_id?: number;
  args?: HValue[];
  named_args?: { name: string; value: HValue }[];
  want_rows?: boolean;
}

type HCond =
  | { type: "ok" | "error"; step: number }
  | { type: "not"; cond: HCond }
  | { type: "and" | "or"; conds: HCond[] }
  | { type: "is_autocommit" };

interface HRequest {
  type: string;
  stmt?: HStmt;
  batch?: { steps: { condition?: HCond; stmt: HStmt }[] };
  sql?: string;
  sql_id?: number;
}

export interface FakeSqld {
  url: string;
  /** Pipeline requests served (for assertions that the Worker really used this server). */
  pipelines(): number;
  /** Every request line received, e.g. "POST /v2/pipeline", in order. */
  requests(): string[];
  /** Changes the token the server accepts (undefined = none). */
  setToken(token: string | undefined): void;
  /** Runs SQL directly on the backing database. */
  query(sql: string): Record<string, unknown>[];
  close(): Promise<void>;
}

class SqlError extends Error {}

export async function startFakeSqld(token?: string): Promise<FakeSqld> {
  const db = new DatabaseSync(":memory:");
  const streams = new Map<string, Map<number, string>>();
  let nextBaton = 1;
  let pipelines = 0;
  const requestLines: string[] = [];

  const decode = (v: HValue): SQLInputValue => {
    switch (v.type) {
      case "null":
        return null;
      case "integer":
        return BigInt(v.value);
      case "float":
      case "text":
        return v.value;
      case "blob":
        return Buffer.from(v.base64, "base64");
    }
  };
  const encode = (v: unknown): HValue => {
    if (v === null || v === undefined) return { type: "null" };
    if (typeof v === "bigint") return { type: "integer", value: v.toString() };
    if (typeof v === "number") return { type: "float", value: v };
    if (typeof v === "string") return { type: "text", value: v };
    if (v instanceof Uint8Array) return { type: "blob", base64: Buffer.from(v).toString("base64") };
    throw new Error(`cannot encode ${typeof v}`);
  };
  const totalChanges = db.prepare("SELECT total_changes() AS n, changes() AS c, last_insert_rowid() AS r");
  totalChanges.setReadBigInts(true);

  const execute = (stmt: HStmt, sqls: Map<number, string>) => {
    const sql = stmt.sql ?? (stmt.sql_id !== undefined ? sqls.get(stmt.sql_id) : undefined);
    if (sql === undefined) throw new SqlError(`unknown sql_id ${stmt.sql_id}`);
    let prepared: StatementSync;
    try {
      prepared = db.prepare(sql);
    } catch (e) {
      throw new SqlError((e as Error).message);
    }
    prepared.setReadBigInts(true);
    const cols = prepared.columns().map((c) => ({ name: c.name, decltype: c.type ?? null }));
    const positional = (stmt.args ?? []).map(decode);
    const named = Object.fromEntries(
      (stmt.named_args ?? []).map((a) => [a.name.replace(/^[:@$]/, ""), decode(a.value)]),
    );
    const before = (totalChanges.get() as { n: bigint }).n;
    let rows: Record<string, unknown>[];
    try {
      rows = (
        stmt.named_args?.length ? prepared.all(named, ...positional) : prepared.all(...positional)
      ) as Record<string, unknown>[];
    } catch (e) {
      throw new SqlError((e as Error).message);
    }
    const after = totalChanges.get() as { n: bigint; c: bigint; r: bigint };
    const names = cols.map((c) => c.name);
    return {
      cols,
      rows: stmt.want_rows === false ? [] : rows.map((row) => names.map((n) => encode(row[n]))),
      affected_row_count: after.n === before ? 0 : Number(after.c),
      last_insert_rowid: after.r.toString(),
    };
  };

  const autocommit = () => !db.isTransaction;

  const batch = (steps: { condition?: HCond; stmt: HStmt }[], sqls: Map<number, string>) => {
    const results: (ReturnType<typeof execute> | null)[] = [];
    const errors: ({ message: string } | null)[] = [];
    const holds = (c: HCond): boolean => {
      switch (c.type) {
        case "ok":
          return results[c.step] != null;
        case "error":
          return errors[c.step] != null;
        case "not":
          return !holds(c.cond);
        case "and":
          return c.conds.every(holds);
        case "or":
          return c.conds.some(holds);
        case "is_autocommit":
          return autocommit();
      }
    };
    for (const step of steps) {
      if (step.condition !== undefined && !holds(step.condition)) {
        results.push(null);
        errors.push(null);
        continue;
      }
      try {
        results.push(execute(step.stmt, sqls));
        errors.push(null);
      } catch (e) {
        if (!(e instanceof SqlError)) throw e;
        results.push(null);
        errors.push({ message: e.message });
      }
    }
    return { step_results: results, step_errors: errors };
  };

  const serve = (body: { baton?: string | null; requests: HRequest[] }) => {
    let baton = body.baton ?? undefined;
    const sqls = baton === undefined ? new Map<number, string>() : streams.get(baton);
    if (sqls === undefined) return { status: 400, json: { message: "unknown baton" } };
    if (baton !== undefined) streams.delete(baton);
    let closed = false;
    const results = body.requests.map((r) => {
      try {
        switch (r.type) {
          case "execute":
            return { type: "ok", response: { type: "execute", result: execute(r.stmt!, sqls) } };
          case "batch":
            return { type: "ok", response: { type: "batch", result: batch(r.batch!.steps, sqls) } };
          case "sequence":
            db.exec(r.sql ?? sqls.get(r.sql_id!) ?? "");
            return { type: "ok", response: { type: "sequence" } };
          case "store_sql":
            sqls.set(r.sql_id!, r.sql!);
            return { type: "ok", response: { type: "store_sql" } };
          case "close_sql":
            sqls.delete(r.sql_id!);
            return { type: "ok", response: { type: "close_sql" } };
          case "get_autocommit":
            return { type: "ok", response: { type: "get_autocommit", is_autocommit: autocommit() } };
          case "close":
            closed = true;
            return { type: "ok", response: { type: "close" } };
          default:
            return { type: "error", error: { message: `unsupported request ${r.type}` } };
        }
      } catch (e) {
        if (!(e instanceof SqlError)) throw e;
        return { type: "error", error: { message: e.message } };
      }
    });
    if (closed) {
      // A stream closed inside a transaction rolls it back, as sqld does.
      if (db.isTransaction) db.exec("ROLLBACK");
      baton = undefined;
    } else {
      baton = `b${nextBaton++}`;
      streams.set(baton, sqls);
    }
    return { status: 200, json: { baton: baton ?? null, base_url: null, results } };
  };

  const readBody = async (req: IncomingMessage) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString("utf8");
  };

  const server: Server = createServer(async (req, res) => {
    const reply = (status: number, json: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(json));
    };
    const text = await readBody(req);
    requestLines.push(`${req.method} ${req.url}`);
    if (token !== undefined && req.headers.authorization !== `Bearer ${token}`) {
      reply(401, { message: "Unauthorized" });
      return;
    }
    if (req.method === "GET" && req.url === "/v2") return reply(200, {});
    if (req.method !== "POST" || req.url !== "/v2/pipeline") return reply(404, { message: "Not Found" });
    pipelines++;
    try {
      const { status, json } = serve(JSON.parse(text));
      reply(status, json);
    } catch (e) {
      reply(500, { message: (e as Error).message });
    }
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    pipelines: () => pipelines,
    requests: () => [...requestLines],
    setToken: (t) => {
      token = t;
    },
    query: (sql) => db.prepare(sql).all() as Record<string, unknown>[],
    close: () =>
      new Promise((done) => {
        server.closeAllConnections();
        server.close(() => {
          db.close();
          done();
        });
      }),
  };
}
