/** The outcome of running one validation file, and its text rendering for the CLI. */

export type QueryKind = "check" | "entity_filter" | "subject_filter";

/** One entry of an `assertions` map, run as one engine call. */
export interface AssertionOutcome {
  kind: QueryKind;
  scenario: string;
  /**
   * Permify's query text: checks `<subject> <permission> <entity>`, entity filters
   * `<subject> <permission> <entity_type>`, subject filters `<entity> <permission> <subject_reference>`.
   */
  query: string;
  /** Line of the assertion in the file. */
  line: number;
  /** true = ALLOWED / false = DENIED for checks; the expected ids for filters. */
  expected: boolean | string[];
  /** What the engine answered; absent when it failed with an error. */
  actual?: boolean | string[];
  /** The engine's error (the assertion then fails). */
  error?: string;
  pass: boolean;
}

/** A non-fatal problem that Permify lists among the failures: an unparsable string, an invalid depth, ... */
export interface RunProblem {
  stage: "relationships" | "attributes" | "scenarios";
  /** The offending string or query. */
  key: string;
  line: number;
  message: string;
}

/** Why the run stopped before the scenarios (Permify exits with `Error: ...`). */
export interface RunAbort {
  stage: "file" | "schema" | "relationships" | "attributes";
  /** ERROR_CODE_* when the cause is a PembaError. */
  code?: string;
  message: string;
  /** The offending tuple or attribute string. */
  key?: string;
  line?: number;
}

export interface ValidationReport {
  ok: boolean;
  aborted?: RunAbort;
  problems: RunProblem[];
  assertions: AssertionOutcome[];
  passed: number;
  failed: number;
}

const checkWord = (allowed: boolean): string => (allowed ? "ALLOWED" : "DENIED");

function describeValue(kind: QueryKind, v: boolean | string[]): string {
  if (kind === "check") return checkWord(v as boolean);
  return `[${(v as string[]).join(" ")}]`;
}

/** The text of one failed assertion (Permify's `fail: <query> -> ...` line, plus the file line). */
export function describeFailure(a: AssertionOutcome): string {
  const where = `line ${a.line}: ${a.query}`;
  if (a.error !== undefined) return `fail: ${where} -> ${a.error}`;
  return `fail: ${where} -> expected: ${describeValue(a.kind, a.expected)} actual: ${describeValue(a.kind, a.actual ?? [])}`;
}

function describeAbort(a: RunAbort): string {
  switch (a.stage) {
    case "file":
      return `Error: ${a.message}`;
    case "schema":
      return `Error: invalid schema${a.line !== undefined ? ` (file line ${a.line})` : ""}: ${a.message}`;
    default: {
      const what = a.stage === "relationships" ? "relationship" : "attribute";
      const line = a.line !== undefined ? ` (line ${a.line})` : "";
      const detail = a.code !== undefined && a.message !== a.code ? `: ${a.message}` : "";
      return `Error: ${a.code ?? a.message}: invalid ${what} ${JSON.stringify(a.key ?? "")}${line}${detail}`;
    }
  }
}

/** The CLI text: every failure, then one summary line (`SUCCESS: ...` or `FAILED: ...`). */
export function formatReport(report: ValidationReport): string {
  const lines: string[] = [];
  if (report.aborted) {
    lines.push(describeAbort(report.aborted));
    lines.push(
      `FAILED: validation stopped at ${report.aborted.stage === "file" ? "the file format" : report.aborted.stage}`,
    );
    return lines.join("\n");
  }
  for (const p of report.problems) lines.push(`fail: line ${p.line}: ${p.key} -> ${p.message}`);
  for (const a of report.assertions) if (!a.pass) lines.push(describeFailure(a));
  const total = report.passed + report.failed;
  const counts = `${report.passed} of ${total} assertion${total === 1 ? "" : "s"} passed`;
  if (report.ok) lines.push(`SUCCESS: ${counts}`);
  else {
    const problems = report.problems.length > 0 ? `, ${report.problems.length} other error(s)` : "";
    lines.push(`FAILED: ${counts}, ${report.failed} failed${problems}`);
  }
  return lines.join("\n");
}
