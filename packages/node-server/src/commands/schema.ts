/**
 * `pemba schema diff <old.perm> <new.perm> [--database <url>]`: what changing the schema from old to new would do,
 * for CI. Without --database, the structure (removals, additions, type changes, permissions that may decide
 * differently); with it, measured on the tenant's live data at the head: the rows each removal orphans, the stored
 * values that no longer fit a changed type, and the (entity, subject) pairs whose decision flips.
 * Exit 0 = safe, 1 = the change orphans or breaks stored rows (unmeasured: removes or retypes anything), or with
 * --fail-on-flips flips a decision; 2 = usage (also a --database file that does not exist).
 */
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import {
  describeDatabase,
  orphanedRows,
  PembaService,
  parseSchema,
  removalName,
  type SchemaDiffAnswer,
  schemaDiffToWire,
  structuralReport,
} from "@pemba/core";
import { openStore } from "@pemba/core/node";
import { ConfigError } from "../config.ts";
import { callerPath } from "./caller-path.ts";

const USAGE =
  "usage: pemba schema diff <old.perm> <new.perm> [--database <url>] [--tenant <id>] [--sample <n>] [--json] [--fail-on-flips]\n";

const count = (n: number) => n.toLocaleString("en-US");
const plural = (n: number, word: string) => `${count(n)} ${word}${n === 1 ? "" : "s"}`;
const short = (result: string) => result.replace("CHECK_RESULT_", "");

/** The report as text, one finding a line; the last line says what the exit status means. */
export function formatSchemaDiff(answer: SchemaDiffAnswer, heading: string): string {
  const r = answer.report;
  const lines = [heading];
  if (r.removed.length > 0) {
    lines.push("removed:");
    for (const x of r.removed) {
      const rows = r.measured
        ? (x.tuples ?? 0) + (x.attributes ?? 0) === 0
          ? "nothing orphaned"
          : `orphans ${[x.tuples ? plural(x.tuples, "tuple") : "", x.attributes ? plural(x.attributes, "attribute") : ""].filter(Boolean).join(" and ")}`
        : "rows not measured (no --database)";
      lines.push(`  ${removalName(x)}: ${rows}`);
    }
  }
  if (r.added.length > 0) {
    lines.push("added:");
    for (const a of r.added) lines.push(`  ${a.kind.toLowerCase()} ${a.entity}${a.name ? `#${a.name}` : ""}`);
  }
  if (r.attributeTypeChanges.length > 0) {
    lines.push("attribute type changes:");
    for (const c of r.attributeTypeChanges) {
      const fit = r.measured
        ? `${count(c.mismatched ?? 0)} of ${plural(c.values ?? 0, "stored value")} no longer fit`
        : "values not measured (no --database)";
      lines.push(`  ${c.entity}#${c.attribute} ${c.from} -> ${c.to}: ${fit}`);
    }
  }
  if (r.permissions.length > 0) {
    lines.push("decisions:");
    for (const p of r.permissions) {
      const name = `${p.entity}#${p.permission}`;
      if (p.checked === undefined) {
        lines.push(`  ${name}: definition or a dependency changed (decisions not measured)`);
        continue;
      }
      const of = p.sampled
        ? `a sample of ${count(p.checked)} of ${plural(p.pairs ?? 0, "pair")} (seed ${r.sample.seed})`
        : `all ${plural(p.checked, "pair")}`;
      lines.push(
        `  ${name}: ${count(p.allowedToDenied ?? 0)} ALLOWED -> DENIED, ${count(p.deniedToAllowed ?? 0)} DENIED -> ALLOWED in ${of}`,
      );
      for (const e of p.examples ?? []) {
        const subject = `${e.subject.type}:${e.subject.id}${e.subject.relation ? `#${e.subject.relation}` : ""}`;
        lines.push(`    ${e.entity.type}:${e.entity.id} ${subject}: ${short(e.from)} -> ${short(e.to)}`);
      }
    }
  }
  if (r.unchangedPermissions > 0)
    lines.push(`${plural(r.unchangedPermissions, "permission")} unchanged (definition and dependencies)`);
  return `${lines.join("\n")}\n`;
}

/** 1 when the change orphans or breaks stored rows (or, unmeasured, removes or retypes anything). */
function breaks(answer: SchemaDiffAnswer): boolean {
  const r = answer.report;
  if (!r.measured) return r.removed.length > 0 || r.attributeTypeChanges.length > 0;
  return orphanedRows(r) > 0;
}

const flips = (answer: SchemaDiffAnswer) =>
  answer.report.permissions.some((p) => (p.allowedToDenied ?? 0) + (p.deniedToAllowed ?? 0) > 0);

async function diff(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      database: { type: "string" },
      tenant: { type: "string", default: "t1" },
      sample: { type: "string" },
      json: { type: "boolean" },
      "fail-on-flips": { type: "boolean" },
    },
    allowPositionals: true,
    strict: true,
  });
  const sample = values.sample === undefined ? undefined : Number(values.sample);
  if (positionals.length !== 2 || (sample !== undefined && !(Number.isInteger(sample) && sample > 0))) {
    process.stderr.write(USAGE);
    return 2;
  }
  const [oldPath, newPath] = positionals as [string, string];
  const [oldText, newText] = await Promise.all([
    readFile(callerPath(oldPath), "utf8"),
    readFile(callerPath(newPath), "utf8"),
  ]);
  const started = performance.now();
  let answer: SchemaDiffAnswer;
  let where = "structure only (no --database)";
  const database = values.database;
  if (database === undefined) {
    const report = structuralReport(parseSchema(oldText), parseSchema(newText), { sampleSize: sample });
    answer = { baseVersion: "", snapToken: "", report };
  } else {
    if (!/^[a-z][a-z0-9+.-]*:/i.test(database) && !existsSync(callerPath(database)))
      throw new ConfigError(`--database ${database}: no such SQLite file`);
    const store = await openStore(/^[a-z][a-z0-9+.-]*:/i.test(database) ? database : callerPath(database));
    try {
      const service = new PembaService(store);
      answer = await service.diffSchema(values.tenant!, {
        baseVersion: "",
        baseSchema: oldText,
        schema: newText,
        snapToken: "",
        sampleSize: sample,
      });
    } finally {
      await store.close();
    }
    where = `data of tenant ${values.tenant} in ${describeDatabase(database)} at snap token ${answer.snapToken}`;
  }
  const ms = performance.now() - started;
  if (values.json) process.stdout.write(`${JSON.stringify(schemaDiffToWire(answer))}\n`);
  else {
    process.stdout.write(formatSchemaDiff(answer, `schema diff ${oldPath} -> ${newPath}: ${where}`));
    process.stdout.write(`diffed in ${ms.toFixed(1)} ms\n`);
  }
  if (breaks(answer)) return 1;
  return values["fail-on-flips"] && flips(answer) ? 1 : 0;
}

export async function runSchema(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === "diff") return diff(rest);
  process.stderr.write(USAGE);
  return 2;
}
