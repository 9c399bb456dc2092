/**
 * The documents that list settings agree with the one definition: the READMEs' tables are rendered from it (run
 * `pnpm --filter @pemba/core run settings-docs` after changing a setting), and wrangler.toml's [vars] name only
 * Worker settings, with their defaults.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { defaultText, SETTINGS, type SettingDef, settingsOf } from "./definition.ts";
import { helpOptionLines } from "./docs.ts";
import { ConfigError } from "./parsers.ts";
import { README_SECTIONS, withSettingsTable } from "./readme-sections.ts";
import { resolveNodeSettings, resolveWorkerSettings } from "./resolve.ts";

const ROOT = join(import.meta.dirname, "../../../..");
const read = (file: string) => readFileSync(join(ROOT, file), "utf8");

const workerSettings = new Map<string, SettingDef>(settingsOf("worker").map(([, def]) => [def.env, def]));

/** The docs' words for a Worker setting's default: its value, or what leaving it unset means. */
const defaultWords = (def: SettingDef) => defaultText(def, "worker") ?? def.unset ?? "none";

interface VarLine {
  name: string;
  value: string;
  commented: boolean;
  /** The comment lines right above it. */
  comment: string;
}

/** wrangler.toml's [vars] entries, set (`NAME = "v"`) or shown commented out (`# NAME = "v"`). */
function wranglerVars(): { text: string; vars: VarLine[] } {
  const toml = read("wrangler.toml");
  const start = toml.indexOf("[vars]\n");
  const end = toml.indexOf("\n[", start + 1);
  const text = toml.slice(start, end < 0 ? undefined : end);
  const vars: VarLine[] = [];
  let comment: string[] = [];
  for (const line of text.split("\n").slice(1)) {
    const entry = /^(#\s*)?(PEMBA_\w+)\s*=\s*"(.*)"\s*$/.exec(line);
    if (entry !== null) {
      vars.push({
        name: entry[2]!,
        value: entry[3]!,
        commented: entry[1] !== undefined,
        comment: comment.join(" "),
      });
      comment = [];
    } else comment = line.startsWith("#") ? [...comment, line.slice(1).trim()] : [];
  }
  return { text, vars };
}

describe("settings in the docs", () => {
  it.each(README_SECTIONS.map((s) => [s.file, s] as const))(
    "%s: the settings table is rendered from the settings",
    (_, section) => {
      const text = read(section.file);
      expect(withSettingsTable(text, section.runtime)).toBe(text);
    },
  );

  it("`pemba serve --help` lists every Node setting with its flag, default and variable", () => {
    const help = helpOptionLines();
    for (const [, def] of settingsOf("node")) {
      expect(help).toContain(`--${def.flag}`);
      expect(help).toContain(`env ${def.env}`);
      expect(help).toContain(
        `(default ${(defaultText(def, "node") ?? def.unset ?? "none").replaceAll("`", "")})`,
      );
    }
    expect(help).toContain("memory:");
  });

  it("wrangler.toml's [vars] name Worker settings only, each with its default, and mention every one", () => {
    const { text, vars } = wranglerVars();
    expect(vars.length).toBeGreaterThan(0);
    for (const v of vars) {
      const def = workerSettings.get(v.name);
      expect(def, `${v.name} is no Worker setting`).toBeDefined();
      // a commented-out var shows the default; without one, an example that must be valid
      if (v.commented && defaultText(def!, "worker") !== undefined) {
        expect(v.value, v.name).toBe(defaultText(def!, "worker"));
      }
      expect(() => resolveWorkerSettings({ [v.name]: v.value }), v.name).not.toThrow();
      const said = [...v.comment.matchAll(/\(default: ([^)]*)\)/g)].at(-1)?.[1];
      if (said !== undefined) expect(said, v.name).toBe(defaultWords(def!));
    }
    for (const name of workerSettings.keys()) expect(text, `${name} is not mentioned`).toContain(name);
  });
});

describe("one definition, both runtimes", () => {
  it("every setting has a PEMBA_ variable, a help line per runtime it serves, and a flag when Node reads it", () => {
    for (const [key, def] of Object.entries(SETTINGS) as [string, SettingDef][]) {
      expect(def.env, key).toMatch(/^PEMBA_[A-Z][A-Z0-9_]*$/);
      if (def.runtimes.includes("node")) expect(def.flag, key).toBeDefined();
      for (const runtime of def.runtimes) {
        const help = typeof def.help === "string" ? def.help : def.help[runtime];
        expect(help, `${key} (${runtime})`).toBeTruthy();
      }
    }
  });

  it("per-runtime defaults: Node's ./pemba.db and a 512 MB working set, the Worker's memory: and 64 MB", () => {
    expect(resolveNodeSettings({}, {})).toMatchObject({ database: "./pemba.db", replicaMemoryMb: 512 });
    expect(resolveWorkerSettings({})).toMatchObject({ database: "memory:", replicaMemoryMb: 64 });
  });

  it("errors name the flag on Node and the variable on Workers", () => {
    const message = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        expect(e).toBeInstanceOf(ConfigError);
        return (e as Error).message;
      }
      throw new Error("no error");
    };
    expect(message(() => resolveNodeSettings({}, { PEMBA_GC_WINDOW: "soon" }))).toBe(
      'invalid --gc-window "soon"; use e.g. 30m, 24h, 7d',
    );
    expect(message(() => resolveWorkerSettings({ PEMBA_GC_WINDOW: "soon" }))).toBe(
      'invalid PEMBA_GC_WINDOW "soon"; use e.g. 30m, 24h, 7d',
    );
    // a key is a secret: an error never quotes one
    expect(message(() => resolveWorkerSettings({ PEMBA_AUTH_KEYS: "s3cret:" }))).toBe(
      "invalid PEMBA_AUTH_KEYS entry; expected key or key:tenant1|tenant2",
    );
  });
});
