/**
 * Which tenants a change of the D1 binding list moves (packages/worker/README.md, "Adding a database"):
 *
 *   node packages/worker/scripts/placement.ts --from DB --to DB,DB2 [--pins acme=DB] < ids
 *
 * reads tenant ids from stdin (one per line, or the JSON of `wrangler d1 execute ... --json --command "SELECT id
 * FROM tenants"`), places each under both lists (pins first, then rendezvous hashing, as the Worker does) and
 * prints, on stdout, the PEMBA_D1_TENANTS entries that keep every moving tenant where it is now (with the pins
 * given), and on stderr one line per moving tenant. Exit code 0; 2 on bad arguments.
 */
import { parseArgs } from "node:util";
import { TenantPlacement } from "@pemba/core";

const USAGE = "usage: placement.ts --from DB[,..] --to DB,DB2[,..] [--pins tenant=DB,..] < tenant ids";

/** Tenant ids from text: one per line, or wrangler's `--json` answer (`[{"results":[{"id":..}]}]`). */
export function tenantIds(text: string): string[] {
  const trimmed = text.trim();
  if (trimmed.startsWith("[")) {
    const answers = JSON.parse(trimmed) as { results?: { id?: unknown }[] }[];
    return answers.flatMap((a) => (a.results ?? []).map((r) => String(r.id)));
  }
  return trimmed
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "");
}

const names = (list: string) =>
  list
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");

function pinsOf(text: string | undefined): Map<string, string> {
  const pins = new Map<string, string>();
  for (const entry of names(text ?? "")) {
    const [tenant, db] = entry.split("=").map((s) => s.trim());
    if (!tenant || !db) throw new Error(`bad pin "${entry}"; expected tenant=BINDING`);
    pins.set(tenant, db);
  }
  return pins;
}

/** The moving tenants: id, where it is now, where the new list puts it. */
export function moves(
  ids: string[],
  from: string[],
  to: string[],
  pins: Map<string, string>,
): { id: string; from: string; to: string }[] {
  const fromPins = new Map([...pins].filter(([, db]) => from.includes(db)));
  const before = new TenantPlacement({ databases: from, pinned: fromPins });
  const after = new TenantPlacement({ databases: to, pinned: pins });
  return ids
    .map((id) => ({ id, from: before.databaseOf(id), to: after.databaseOf(id) }))
    .filter((m) => m.from !== m.to);
}

async function main(): Promise<number> {
  let args: { from?: string; to?: string; pins?: string };
  try {
    args = parseArgs({
      options: { from: { type: "string" }, to: { type: "string" }, pins: { type: "string" } },
    }).values;
  } catch {
    args = {};
  }
  if (args.from === undefined || args.to === undefined) {
    console.error(USAGE);
    return 2;
  }
  let input = "";
  for await (const chunk of process.stdin) input += chunk;
  const pins = pinsOf(args.pins);
  const moving = moves(tenantIds(input), names(args.from), names(args.to), pins);
  for (const m of moving) console.error(`${m.id}: ${m.from} -> ${m.to}`);
  const keep = new Map(pins);
  for (const m of moving) keep.set(m.id, m.from);
  console.log([...keep].map(([t, db]) => `${t}=${db}`).join(","));
  return 0;
}

if (import.meta.url === `file://${process.argv[1]}`) process.exitCode = await main();
