/**
 * The value parsers of the settings, as zod schemas over the text of a flag or variable. An issue's message may
 * hold `{name}` and `{value}`: the resolver fills in the setting's name as the runtime spells it (a `pemba serve`
 * flag or a Worker var) and the text given, so one parser serves both runtimes.
 */
import { z } from "zod";
import type { PresharedKey } from "../http/auth/preshared.ts";

/** A setting with a value the runtime cannot use; its message names the flag or variable. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

/** `a, b,,c` -> ["a", "b", "c"]. */
export function parseList(text: string, separator = ","): string[] {
  return text
    .split(separator)
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

/**
 * Parses the flag/variable form: comma-separated keys, each `key` or `key:t1|t2` (e.g. `"admin,k1:t1|t2"`).
 * A key itself cannot contain `,` or `:`. Errors name `name` and never quote a key (the Worker answers them).
 */
export function parsePresharedKeys(spec: string, name = "keys"): PresharedKey[] {
  const entries = parseList(spec);
  if (entries.length === 0) throw new ConfigError(`${name} is empty`);
  return entries.map((entry) => {
    const i = entry.indexOf(":");
    if (i < 0) return { key: entry };
    const key = entry.slice(0, i);
    const tenants = parseList(entry.slice(i + 1), "|");
    if (key === "" || tenants.length === 0) {
      throw new ConfigError(`invalid ${name} entry; expected key or key:tenant1|tenant2`);
    }
    return { key, tenants };
  });
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DURATION_HINT = "use e.g. 30m, 24h, 7d";

/** `90s`, `30m`, `24h`, `7d`, `1h30m` or `0` in ms; undefined for anything else. */
function durationMs(text: string): number | undefined {
  if (text === "0") return 0;
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join("") !== text) return undefined;
  return parts.reduce((sum, p) => sum + Number(p[1]) * DURATION_UNITS[p[2]!]!, 0);
}

/** A duration in ms; a ConfigError naming `name` when `text` is none. */
export function parseDuration(text: string, name = "duration"): number {
  const ms = durationMs(text);
  if (ms === undefined) throw new ConfigError(`invalid ${name} "${text}"; ${DURATION_HINT}`);
  return ms;
}

/** Fills in an issue message's placeholders. */
export function issueMessage(message: string, name: string, value: string): string {
  return message.replaceAll("{name}", name).replaceAll("{value}", value);
}

const INVALID = 'invalid {name} "{value}"';

type Ctx = z.RefinementCtx<string>;
function fail(ctx: Ctx, message: string): never {
  ctx.addIssue({ code: "custom", message });
  return z.NEVER;
}

export const text = z.string();

export const list = z.string().transform((s) => parseList(s));

/** `a=X, b=Y` -> Map {a => X, b => Y}: each key once, both sides non-empty. */
export const pairs = z.string().transform((s, ctx) => {
  const map = new Map<string, string>();
  for (const entry of parseList(s)) {
    const eq = entry.indexOf("=");
    const key = entry.slice(0, eq).trim();
    const value = entry.slice(eq + 1).trim();
    if (eq < 0 || key === "" || value === "") {
      return fail(ctx, `invalid {name} entry "${entry}"; expected key=value, e.g. acme=DB2`);
    }
    if (map.has(key)) return fail(ctx, `invalid {name}: "${key}" is given twice`);
    map.set(key, value);
  }
  return map;
});

/** D1's latencies for a simulation (PEMBA_D1_SIMULATE): ms per round trip at a replica and at the primary, and the
 * range a write's lag to the replicas is drawn from. */
export interface D1Simulation {
  replicaMs: number;
  primaryMs: number;
  lagMinMs: number;
  lagMaxMs: number;
}

const D1_SIMULATION_HINT =
  "expected off or replica=<duration>,primary=<duration>,lag=<duration>[-<duration>], e.g. replica=3ms,primary=100ms,lag=0-2s";

/** `off`, or `replica=3ms,primary=100ms,lag=0-2s` (each part optional, default 0; `lag=1s` is `lag=1s-1s`). */
export const d1Simulation = z.string().transform((s, ctx): D1Simulation | undefined => {
  if (s.trim().toLowerCase() === "off") return undefined;
  const sim: D1Simulation = { replicaMs: 0, primaryMs: 0, lagMinMs: 0, lagMaxMs: 0 };
  const seen = new Set<string>();
  for (const entry of parseList(s)) {
    const [key = "", value = ""] = entry.split("=", 2).map((p) => p.trim());
    const [from = "", to = from] = value.split("-", 2);
    const low = durationMs(from);
    const high = durationMs(to);
    if (seen.has(key) || low === undefined || high === undefined || high < low) {
      return fail(ctx, `${INVALID}; ${D1_SIMULATION_HINT}`);
    }
    seen.add(key);
    if (key === "replica" && low === high) sim.replicaMs = low;
    else if (key === "primary" && low === high) sim.primaryMs = low;
    else if (key === "lag") {
      sim.lagMinMs = low;
      sim.lagMaxMs = high;
    } else return fail(ctx, `${INVALID}; ${D1_SIMULATION_HINT}`);
  }
  return sim;
});

export const count = z.string().transform((s, ctx) => {
  const clean = s.replace(/_/g, "");
  return /^\d+$/.test(clean) ? Number(clean) : fail(ctx, `${INVALID}; expected a whole number`);
});

/** A whole number of at least 1. */
export const positiveCount = z.string().transform((s, ctx) => {
  const clean = s.replace(/_/g, "");
  return /^\d+$/.test(clean) && Number(clean) >= 1
    ? Number(clean)
    : fail(ctx, `${INVALID}; expected a whole number of at least 1`);
});

export const port = z
  .string()
  .transform((s, ctx) =>
    /^\d+$/.test(s) && Number(s) <= 65535 ? Number(s) : fail(ctx, `${INVALID}; expected 0 to 65535`),
  );

export const duration = z
  .string()
  .transform((s, ctx) => durationMs(s) ?? fail(ctx, `${INVALID}; ${DURATION_HINT}`));

const ON = ["on", "true", "1"];
const OFF = ["off", "false", "0"];
export const onOff = z.string().transform((s, ctx) => {
  const word = s.toLowerCase();
  if (ON.includes(word)) return true;
  if (OFF.includes(word)) return false;
  return fail(ctx, `${INVALID}; expected on or off`);
});

/** A fraction from 0 to 1, e.g. 0.01. */
export const ratio = z.string().transform((s, ctx) => {
  const value = Number(s);
  return /^\d*\.?\d+$/.test(s) && value <= 1 ? value : fail(ctx, `${INVALID}; expected a number from 0 to 1`);
});

export const url = z.string().transform((s, ctx) => (URL.canParse(s) ? s : fail(ctx, INVALID)));

export function oneOf<T extends string>(choices: readonly T[]) {
  return z
    .string()
    .transform((s, ctx) =>
      (choices as readonly string[]).includes(s)
        ? (s as T)
        : fail(ctx, `${INVALID}; expected one of ${choices.join(", ")}`),
    );
}

export function someOf<T extends string>(choices: readonly T[]) {
  return z.string().transform((s, ctx) => {
    const picked = parseList(s);
    const wrong = picked.find((p) => !(choices as readonly string[]).includes(p));
    if (wrong !== undefined) {
      return fail(ctx, `invalid {name} entry "${wrong}"; expected some of ${choices.join(", ")}`);
    }
    return picked as T[];
  });
}

/** A parser that throws ConfigError with `{name}` in its message, as a schema. */
export function fromParser<T>(parse: (s: string, name: string) => T) {
  return z.string().transform((s, ctx) => {
    try {
      return parse(s, "{name}");
    } catch (e) {
      if (e instanceof ConfigError) return fail(ctx, e.message);
      throw e;
    }
  });
}
