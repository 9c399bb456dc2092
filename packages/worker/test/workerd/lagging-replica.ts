/**
 * A D1 binding with a read replica that lags, for testing the D1 Sessions routing against two REAL local D1
 * databases: `primary` takes every write; `replica` is a second database that receives the primary's writes only
 * when the test calls `catchUp()`. Sessions follow D1's rules: `first-primary` starts at the primary,
 * `first-unconstrained` at the replica, a bookmark at the replica when it is at least that new (else the primary);
 * a write always goes to the primary, and a session never moves back to an older database. Bookmarks are the
 * primary's write count (8 hex digits). Every statement is logged with the database that ran it.
 */
import type { D1Database, D1DatabaseSession, D1PreparedStatement, D1Result } from "@pemba/core";

export type Target = "primary" | "replica";

export interface LoggedStatement {
  target: Target;
  sql: string;
  params: unknown[];
  /** Statements sent in the same request (one `all()`, or one `batch()`) share a number. */
  request: number;
}

const isRead = (sql: string) => /^\s*(SELECT|WITH)\b/i.test(sql);
const bookmarkOf = (position: number) => position.toString(16).padStart(8, "0");

class Prepared implements D1PreparedStatement {
  private readonly session: Session;
  readonly sql: string;
  readonly params: unknown[];

  constructor(session: Session, sql: string, params: unknown[] = []) {
    this.session = session;
    this.sql = sql;
    this.params = params;
  }
  bind(...values: unknown[]): D1PreparedStatement {
    return new Prepared(this.session, this.sql, values);
  }
  async all(): Promise<D1Result> {
    const [result] = await this.session.run([this]);
    return result;
  }
}

class Session implements D1DatabaseSession {
  private at: Target | undefined;
  private position: number | undefined;

  private readonly db: LaggingReplicaD1;
  private readonly start: "primary" | "unconstrained" | number;

  constructor(db: LaggingReplicaD1, start: "primary" | "unconstrained" | number) {
    this.db = db;
    this.start = start;
  }

  prepare(sql: string): D1PreparedStatement {
    return new Prepared(this, sql);
  }

  batch(statements: D1PreparedStatement[]): Promise<D1Result[]> {
    return this.run(statements as Prepared[]);
  }

  getBookmark(): string | null {
    return this.position === undefined ? null : bookmarkOf(this.position);
  }

  async run(statements: Prepared[]): Promise<D1Result[]> {
    const writes = statements.some((s) => !isRead(s.sql));
    this.at = writes ? "primary" : (this.at ?? this.db.firstTarget(this.start));
    const results = await this.db.execute(this.at, statements, writes);
    this.position = this.db.positionOf(this.at);
    return results;
  }
}

export class LaggingReplicaD1 implements D1Database {
  readonly log: LoggedStatement[] = [];
  private primaryPosition = 0;
  private replicaPosition = 0;
  private readonly unreplicated: Prepared[][] = [];
  private requests = 0;
  private readonly direct = new Session(this, "primary");

  readonly primary: D1Database;
  readonly replica: D1Database | undefined;

  /** Without `replica`, every statement goes to `primary`: a recorder of what the store sends. */
  constructor(primary: D1Database, replica?: D1Database) {
    this.primary = primary;
    this.replica = replica;
  }

  withSession(constraintOrBookmark = "first-unconstrained"): D1DatabaseSession {
    if (constraintOrBookmark === "first-primary") return new Session(this, "primary");
    if (constraintOrBookmark === "first-unconstrained") return new Session(this, "unconstrained");
    if (!/^[0-9a-f]{8}$/.test(constraintOrBookmark)) throw new Error(`bad bookmark ${constraintOrBookmark}`);
    return new Session(this, Number.parseInt(constraintOrBookmark, 16));
  }

  /** Without a session, D1 sends everything to the primary. */
  prepare(sql: string): D1PreparedStatement {
    return this.direct.prepare(sql);
  }

  batch(statements: D1PreparedStatement[]): Promise<D1Result[]> {
    return this.direct.batch(statements);
  }

  firstTarget(start: "primary" | "unconstrained" | number): Target {
    if (start === "primary" || this.replica === undefined) return "primary";
    if (start === "unconstrained") return "replica";
    return this.replicaPosition >= start ? "replica" : "primary";
  }

  positionOf(target: Target): number {
    return target === "primary" ? this.primaryPosition : this.replicaPosition;
  }

  async execute(target: Target, statements: Prepared[], writes: boolean): Promise<D1Result[]> {
    const request = this.requests++;
    for (const s of statements) this.log.push({ target, sql: s.sql, params: s.params, request });
    const db = target === "primary" || this.replica === undefined ? this.primary : this.replica;
    const results = await db.batch(statements.map((s) => db.prepare(s.sql).bind(...s.params)));
    if (writes && this.replica !== undefined) {
      this.unreplicated.push(statements);
    }
    if (writes) this.primaryPosition++;
    return results;
  }

  /** Replays the primary's writes the replica has not seen yet (the first `writes` of them, when given). */
  async catchUp(writes = this.unreplicated.length): Promise<void> {
    const replica = this.replica;
    if (replica === undefined) return;
    const replayed = this.unreplicated.splice(0, writes);
    for (const statements of replayed) {
      await replica.batch(statements.map((s) => replica.prepare(s.sql).bind(...s.params)));
      this.replicaPosition++;
    }
    // D1 replicates values, a replay recomputes them: the tenants' created_at (a SQL default) as the primary has it
    if (replayed.length > 0) await this.copyTenantTimes();
  }

  private async copyTenantTimes(): Promise<void> {
    const replica = this.replica!;
    const exists = await this.primary
      .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'tenants'")
      .all();
    if (exists.results.length === 0) return;
    const { results } = await this.primary.prepare("SELECT id, created_at FROM tenants").all();
    if (results.length === 0) return;
    await replica.batch(
      results.map((r) =>
        replica.prepare("UPDATE tenants SET created_at = ? WHERE id = ?").bind(r.created_at, r.id),
      ),
    );
  }

  /** The primary's writes the replica has not seen yet. */
  get behind(): number {
    return this.unreplicated.length;
  }

  statementsOn(target: Target): LoggedStatement[] {
    return this.log.filter((s) => s.target === target);
  }
}
