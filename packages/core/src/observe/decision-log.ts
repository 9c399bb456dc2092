/**
 * The decision log: one structured record per decision (a check, each bulk-check item, an explain, a lookup, a
 * subject-permission answer, each AuthZEN evaluation and search), written by a sink the runtime gives (NDJSON on stdout or to a file, OTLP logs, the
 * Worker's console). Runtime-neutral.
 *
 * A decision only hands its record to `DecisionLog.add`: sampling, redaction and serialisation happen there, and the
 * record waits in a bounded buffer until the next flush hands a batch of lines to the sink. While the sink is busy
 * (a write in flight) records keep queueing; when the buffer is full a record is dropped and counted (`dropped`),
 * so a slow or stuck sink never blocks or slows a decision.
 */
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex } from "@noble/hashes/utils.js";
import type { Context } from "../model.ts";
import type { WireContext } from "../wire/common.ts";
import { attributeToWire, tupleToWire } from "../wire/convert.ts";

/** The API whose answer a record is. */
export type DecisionApi =
  | "check"
  | "bulk_check"
  | "explain"
  | "lookup_entity"
  | "lookup_subject"
  | "subject_permission"
  | "authzen_evaluation"
  | "authzen_evaluations"
  | "authzen_subject_search"
  | "authzen_resource_search"
  | "authzen_action_search";

/** One decision as the log writes it (snake_case: the field names of the NDJSON line). */
export interface DecisionRecord {
  /** When the decision was made (RFC 3339, ms). */
  time: string;
  api: DecisionApi;
  tenant: string;
  /** Who asked: `key:<fingerprint>` for a preshared key, the JWT `sub` for OIDC, "" without authentication. */
  principal: string;
  /** `type:id` or `type:id#relation`; lookup-subject: the subject type asked for (`type` or `type#relation`). */
  subject: string;
  /** The permission (or relation) asked about. */
  permission: string;
  /** `type:id`; lookup-entity: the entity type asked for. */
  entity: string;
  /** CHECK_RESULT_ALLOWED / CHECK_RESULT_DENIED; lookups: LOOKUP (see `count` and `ids`). */
  decision: string;
  /** The snap the decision was evaluated at, as a snap token (re-running with it reproduces the decision). */
  snap_token: string;
  schema_version: string;
  check_count: number;
  /** From the request's start to the decision (ms). */
  latency_ms: number;
  /** The request's trace (W3C trace id), "" when it has none. */
  trace_id: string;
  /** Lookups: how many ids the page answered. */
  count?: number;
  /** Lookups: the first ids answered (at most the log's `maxIds`). */
  ids?: string[];
  /** The request's contextual tuples, attributes and data (as a check request has them), unless redacted. */
  context?: Context | WireContext;
  /** The request's depth (a re-run uses it). */
  depth?: number;
}

/** Fields a redaction may remove or hash. */
export const DECISION_REDACTIONS = ["subject-id", "context"] as const;
export type DecisionRedaction = (typeof DECISION_REDACTIONS)[number];

export interface DecisionLogOptions {
  /** Receives each flush's records (`toNdjson` writes them as lines); a promise keeps the next flush waiting. */
  sink: (records: DecisionRecord[]) => void | Promise<void>;
  /** Fraction of decisions recorded (0-1); default 1. */
  sampleRatio?: number;
  /** Record every DENIED decision whatever the sample ratio (default true). */
  alwaysDenials?: boolean;
  /** `subject-id`: the subject's id becomes `sha256:<16 hex>` of tenant and id; `context`: the context is left out. */
  redact?: readonly DecisionRedaction[];
  /** Records held at most while the sink is busy; more are dropped (default 10,000). */
  bufferSize?: number;
  /** Lookups: ids kept in a record (default 10). */
  maxIds?: number;
  /**
   * Schedules a flush (default: a 0 ms timer, so a whole request's records go out together). The Worker flushes at
   * the end of each request instead and passes a no-op.
   */
  schedule?: (flush: () => void) => void;
  /** Heard when a record is dropped (the Node server counts it in a Prometheus counter). */
  onDrop?: () => void;
  /** A failed sink write (the lines are lost; the log goes on). */
  onError?: (error: unknown) => void;
  /** The clock of `time` (default Date.now). */
  clock?: () => number;
  /** Sampling's random numbers in [0, 1) (default Math.random). */
  random?: () => number;
}

export const DEFAULT_DECISION_BUFFER = 10_000;
export const DEFAULT_DECISION_MAX_IDS = 10;

/** What a decision hands over; the log adds time and applies the redactions. */
export type DecisionFields = Omit<DecisionRecord, "time">;

export class DecisionLog {
  readonly #sink: DecisionLogOptions["sink"];
  readonly #ratio: number;
  readonly #alwaysDenials: boolean;
  readonly #hashSubject: boolean;
  readonly #dropContext: boolean;
  readonly #bufferSize: number;
  readonly maxIds: number;
  readonly #schedule: (flush: () => void) => void;
  readonly #onDrop: (() => void) | undefined;
  readonly #onError: ((error: unknown) => void) | undefined;
  readonly #clock: () => number;
  readonly #random: () => number;
  #pending: DecisionRecord[] = [];
  #scheduled = false;
  /** The sink's write in flight, if any. */
  #writing: Promise<void> | undefined;
  /** Records dropped because the buffer was full. */
  dropped = 0;
  /** Records handed to the sink. */
  written = 0;

  constructor(opts: DecisionLogOptions) {
    this.#sink = opts.sink;
    this.#ratio = opts.sampleRatio ?? 1;
    this.#alwaysDenials = opts.alwaysDenials ?? true;
    this.#hashSubject = opts.redact?.includes("subject-id") ?? false;
    this.#dropContext = opts.redact?.includes("context") ?? false;
    this.#bufferSize = opts.bufferSize ?? DEFAULT_DECISION_BUFFER;
    this.maxIds = opts.maxIds ?? DEFAULT_DECISION_MAX_IDS;
    this.#schedule = opts.schedule ?? ((flush) => setTimeout(flush, 0));
    this.#onDrop = opts.onDrop;
    this.#onError = opts.onError;
    this.#clock = opts.clock ?? Date.now;
    this.#random = opts.random ?? Math.random;
  }

  /** Whether a decision is recorded: every denial (unless turned off), the sample ratio of the rest. */
  sampled(decision: string): boolean {
    if (this.#ratio >= 1) return true;
    if (this.#alwaysDenials && decision === "CHECK_RESULT_DENIED") return true;
    return this.#random() < this.#ratio;
  }

  /** Records a decision (when sampled, or `sampled` says so already); never throws, never waits. */
  add(fields: DecisionFields, sampled = false): void {
    if (!sampled && !this.sampled(fields.decision)) return;
    if (this.#pending.length >= this.#bufferSize) {
      this.dropped++;
      this.#onDrop?.();
      return;
    }
    const record = fields as DecisionRecord;
    record.time = new Date(this.#clock()).toISOString();
    if (this.#hashSubject) record.subject = hashSubjectId(fields.tenant, fields.subject);
    if (this.#dropContext || record.context === undefined) delete record.context;
    this.#pending.push(record);
    if (!this.#scheduled && this.#writing === undefined) {
      this.#scheduled = true;
      this.#schedule(this.#flushNow);
    }
  }

  /** Records waiting for the sink. */
  get pending(): number {
    return this.#pending.length;
  }

  readonly #flushNow = (): void => {
    this.#scheduled = false;
    void this.flush();
  };

  /** Hands what is pending to the sink; resolves when the sink has taken it (and any write before it). */
  async flush(): Promise<void> {
    while (this.#writing !== undefined) await this.#writing;
    if (this.#pending.length === 0) return;
    const batch = this.#pending;
    this.#pending = [];
    this.written += batch.length;
    try {
      const done = this.#sink(batch);
      if (done instanceof Promise) {
        this.#writing = done.then(
          () => this.#afterWrite(),
          (error: unknown) => {
            this.#onError?.(error);
            this.#afterWrite();
          },
        );
        await this.#writing;
      }
    } catch (error) {
      this.#onError?.(error);
    }
  }

  #afterWrite(): void {
    this.#writing = undefined;
    // records that queued during the write go out now
    if (this.#pending.length > 0 && !this.#scheduled) {
      this.#scheduled = true;
      this.#schedule(this.#flushNow);
    }
  }
}

/** Records as NDJSON: a line each, fields in the documented order. */
export function toNdjson(records: readonly DecisionRecord[]): string {
  let lines = "";
  for (const record of records) lines += recordLine(record);
  return lines;
}

const q = JSON.stringify;

/** `JSON.stringify(orderedRecord(r))` and a newline, without the intermediate object (a line per decision). */
function recordLine(r: DecisionRecord): string {
  let line =
    `{"time":${q(r.time)},"api":${q(r.api)},"tenant":${q(r.tenant)},"principal":${q(r.principal)},` +
    `"subject":${q(r.subject)},"permission":${q(r.permission)},"entity":${q(r.entity)},` +
    `"decision":${q(r.decision)},"snap_token":${q(r.snap_token)},"schema_version":${q(r.schema_version)},` +
    `"check_count":${r.check_count},"latency_ms":${r.latency_ms},"trace_id":${q(r.trace_id)}`;
  if (r.count !== undefined) line += `,"count":${r.count}`;
  if (r.ids !== undefined) line += `,"ids":${q(r.ids)}`;
  if (r.depth !== undefined) line += `,"depth":${r.depth}`;
  if (r.context !== undefined) line += `,"context":${q(contextToWire(r.context as Context))}`;
  return `${line}}\n`;
}

/** The record with its fields in the documented order (JSON keeps insertion order). */
export function orderedRecord(r: DecisionRecord): Record<string, unknown> {
  const out: Record<string, unknown> = {
    time: r.time,
    api: r.api,
    tenant: r.tenant,
    principal: r.principal,
    subject: r.subject,
    permission: r.permission,
    entity: r.entity,
    decision: r.decision,
    snap_token: r.snap_token,
    schema_version: r.schema_version,
    check_count: r.check_count,
    latency_ms: r.latency_ms,
    trace_id: r.trace_id,
  };
  if (r.count !== undefined) out.count = r.count;
  if (r.ids !== undefined) out.ids = r.ids;
  if (r.depth !== undefined) out.depth = r.depth;
  if (r.context !== undefined) out.context = contextToWire(r.context as Context);
  return out;
}

/** The context in Permify's request form, so a logged decision can be asked again as it was. */
function contextToWire(c: Context): unknown {
  return { tuples: c.tuples.map(tupleToWire), attributes: c.attributes.map(attributeToWire), data: c.data };
}

const encoder = new TextEncoder();

/**
 * `type:sha256:<16 hex>` for `type:id[#relation]`: the id replaced by the first 64 bits of SHA-256 over the tenant
 * and the id, so records of one subject still match each other (and `pemba decisions --subject` finds them by the
 * same hash) without the id in the log. A pseudonym, not anonymity: a guessable id can be found by hashing guesses.
 */
export function hashSubjectId(tenant: string, subject: string): string {
  const colon = subject.indexOf(":");
  if (colon < 0) return subject;
  const hash = subject.indexOf("#", colon);
  const id = hash < 0 ? subject.slice(colon + 1) : subject.slice(colon + 1, hash);
  const digest = bytesToHex(sha256(encoder.encode(`${tenant}\u0000${id}`))).slice(0, 16);
  return `${subject.slice(0, colon)}:sha256:${digest}${hash < 0 ? "" : subject.slice(hash)}`;
}
