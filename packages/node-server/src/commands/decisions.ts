/**
 * `pemba decisions <file>...`: reads decision log files (NDJSON, as `--decision-log <file>` writes them) and prints the
 * records that pass the filters, one NDJSON line each. With `--explain`, each matching check (check, bulk-check
 * item, explain, subject-permission answer) is asked again of a running server's explain API at the record's snap
 * token, schema version, depth and context, and the proof is printed under the record; exit 1 when a re-run decides
 * otherwise than the record says. Exit 2 for bad usage.
 */
import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import {
  type DecisionRecord,
  type ExplainResponse,
  formatExplain,
  hashSubjectId,
  parseEntityString,
  parseSubjectString,
} from "@pemba/core";
import { requestExplain } from "./explain.ts";

const USAGE =
  "usage: pemba decisions <file>... [--tenant <id>] [--subject <type:id[#relation]>] [--entity <type:id>]\n" +
  "       [--permission <name>] [--decision allowed|denied|lookup] [--api <api>] [--since <time>] [--until <time>]\n" +
  "       [--trace-id <id>] [--limit <n>] [--explain [--url <url>] [--token <key>]]\n";

const DECISIONS: Record<string, string> = {
  allowed: "CHECK_RESULT_ALLOWED",
  denied: "CHECK_RESULT_DENIED",
  lookup: "LOOKUP",
};

/** The APIs whose records are one check, which explain can ask again. */
const CHECK_APIS = new Set([
  "check",
  "bulk_check",
  "explain",
  "subject_permission",
  "authzen_evaluation",
  "authzen_evaluations",
  "authzen_action_search",
]);

export interface DecisionFilter {
  tenant?: string;
  subject?: string;
  entity?: string;
  permission?: string;
  decision?: string;
  api?: string;
  traceId?: string;
  /** ms since the epoch, inclusive. */
  since?: number;
  /** ms since the epoch, exclusive. */
  until?: number;
}

/** A time filter: RFC 3339, or a duration back from now (`15m`, `2h`, `1d`). */
function parseTime(text: string, now: number): number {
  const ago = /^(\d+)(s|m|h|d)$/.exec(text);
  if (ago !== null) {
    const unit = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[ago[2] as "s" | "m" | "h" | "d"];
    return now - Number(ago[1]) * unit;
  }
  const ms = Date.parse(text);
  if (Number.isNaN(ms)) throw new Error(`not a time: "${text}" (RFC 3339, or 15m / 2h / 1d ago)`);
  return ms;
}

/** Whether `record` passes `filter`; a subject filter also finds records whose subject id was hashed. */
export function matches(record: DecisionRecord, filter: DecisionFilter): boolean {
  if (filter.tenant !== undefined && record.tenant !== filter.tenant) return false;
  if (filter.subject !== undefined && record.subject !== filter.subject) {
    if (record.subject !== hashSubjectId(record.tenant, filter.subject)) return false;
  }
  if (filter.entity !== undefined && record.entity !== filter.entity) return false;
  if (filter.permission !== undefined && record.permission !== filter.permission) return false;
  if (filter.decision !== undefined && record.decision !== filter.decision) return false;
  if (filter.api !== undefined && record.api !== filter.api) return false;
  if (filter.traceId !== undefined && record.trace_id !== filter.traceId) return false;
  if (filter.since !== undefined || filter.until !== undefined) {
    const time = Date.parse(record.time);
    if (filter.since !== undefined && time < filter.since) return false;
    if (filter.until !== undefined && time >= filter.until) return false;
  }
  return true;
}

/** Asks the server's explain API the record's question at its snap token; the answer, or an error message. */
async function explainAgain(
  record: DecisionRecord,
  url: string,
  token: string | undefined,
): Promise<ExplainResponse | string> {
  let entity: ReturnType<typeof parseEntityString>;
  let subject: ReturnType<typeof parseSubjectString>;
  try {
    entity = parseEntityString(record.entity);
    subject = parseSubjectString(record.subject);
  } catch (e) {
    return `cannot re-run: ${(e as Error).message}`;
  }
  if (record.subject.includes(":sha256:")) return "cannot re-run: the subject id was redacted";
  const body: Record<string, unknown> = {
    metadata: {
      depth: record.depth ?? 50,
      snap_token: record.snap_token,
      schema_version: record.schema_version,
    },
    entity,
    permission: record.permission,
    subject,
  };
  if (record.context !== undefined) body.context = record.context;
  return requestExplain(url, token, record.tenant, body);
}

const short = (decision: string) => decision.replace("CHECK_RESULT_", "");

export async function runDecisions(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      tenant: { type: "string" },
      subject: { type: "string" },
      entity: { type: "string" },
      permission: { type: "string" },
      decision: { type: "string" },
      api: { type: "string" },
      since: { type: "string" },
      until: { type: "string" },
      "trace-id": { type: "string" },
      limit: { type: "string" },
      explain: { type: "boolean" },
      url: { type: "string", default: "http://127.0.0.1:3476" },
      token: { type: "string" },
    },
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length === 0) {
    process.stderr.write(USAGE);
    return 2;
  }
  const now = Date.now();
  let filter: DecisionFilter;
  try {
    const decision = values.decision;
    if (
      decision !== undefined &&
      DECISIONS[decision.toLowerCase()] === undefined &&
      !decision.startsWith("CHECK_RESULT_")
    ) {
      throw new Error(`--decision must be allowed, denied or lookup, got "${decision}"`);
    }
    filter = {
      tenant: values.tenant,
      subject: values.subject,
      entity: values.entity,
      permission: values.permission,
      decision: decision === undefined ? undefined : (DECISIONS[decision.toLowerCase()] ?? decision),
      api: values.api,
      traceId: values["trace-id"],
      since: values.since === undefined ? undefined : parseTime(values.since, now),
      until: values.until === undefined ? undefined : parseTime(values.until, now),
    };
  } catch (e) {
    process.stderr.write(`pemba: ${(e as Error).message}\n${USAGE}`);
    return 2;
  }
  const limit = values.limit === undefined ? Number.POSITIVE_INFINITY : Number(values.limit);
  if (!(limit >= 0)) {
    process.stderr.write(`pemba: --limit must be a number, got "${values.limit}"\n`);
    return 2;
  }
  let shown = 0;
  let differing = 0;
  for (const file of positionals) {
    const lines = (await readFile(file, "utf8")).split("\n");
    for (let i = 0; i < lines.length && shown < limit; i++) {
      const line = lines[i]!;
      if (line.trim() === "") continue;
      let record: DecisionRecord;
      try {
        record = JSON.parse(line) as DecisionRecord;
      } catch {
        process.stderr.write(`pemba: ${file}:${i + 1}: not a JSON line, skipped\n`);
        continue;
      }
      if (!matches(record, filter)) continue;
      shown++;
      process.stdout.write(`${line}\n`);
      if (!values.explain) continue;
      if (!CHECK_APIS.has(record.api)) {
        process.stdout.write(`  (a ${record.api} record: only checks can be explained)\n`);
        continue;
      }
      const out = await explainAgain(record, values.url, values.token);
      if (typeof out === "string") {
        process.stdout.write(`  ${out}\n`);
        differing++;
        continue;
      }
      const same = out.can === record.decision;
      if (!same) differing++;
      process.stdout.write(
        `  re-run at snap ${record.snap_token}: ${short(out.can)} (logged ${short(record.decision)})${same ? "" : " DIFFERS"}\n`,
      );
      const tree = formatExplain(out, parseSubjectString(record.subject));
      for (const treeLine of tree.trimEnd().split("\n")) process.stdout.write(`  ${treeLine}\n`);
    }
  }
  return differing > 0 ? 1 : 0;
}
