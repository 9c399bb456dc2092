/** The settings as `pemba --help` lines and as the READMEs' Markdown tables, rendered from the one table. */
import { defaultText, helpText, type Runtime, type SettingDef, settingsOf } from "./definition.ts";

function defaultDoc(def: SettingDef, runtime: Runtime, code: (s: string) => string): string {
  const value = defaultText(def, runtime);
  return value === undefined ? (def.unset ?? "none") : code(value);
}

/** `pemba serve`'s options for `--help`: the flag, its help line with the default, then its variable. */
export function helpOptionLines(): string {
  const plain = (s: string) => s.replaceAll("`", "");
  const rows = settingsOf("node").map(([, def]) => [
    `  --${def.flag}${def.arg === undefined ? "" : ` ${def.arg}`}`,
    `${plain(helpText(def, "node"))} (default ${plain(defaultDoc(def, "node", (s) => s))})`,
    def.arg === undefined ? `${def.env}=1` : def.env,
  ]);
  const width = Math.max(...rows.map((r) => r[0]!.length)) + 2;
  return rows
    .map(([flag, help, env]) => `${flag!.padEnd(width)}${help}\n${" ".repeat(width)}env ${env}`)
    .join("\n");
}

/** A Markdown table with its columns padded (as prettier writes them). */
function markdownTable(header: string[], rows: string[][]): string {
  const cells = [header, ...rows].map((r) => r.map((c) => c.replaceAll("|", "\\|")));
  const widths = header.map((_, i) => Math.max(3, ...cells.map((r) => r[i]!.length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i]!)).join(" | ")} |`;
  const rule = `| ${widths.map((w) => "-".repeat(w)).join(" | ")} |`;
  return [line(cells[0]!), rule, ...cells.slice(1).map(line)].join("\n");
}

/** The settings table of a README: `pemba serve`'s flags and variables (node), or the Worker's vars. */
export function settingsTable(runtime: Runtime): string {
  const code = (s: string) => `\`${s}\``;
  const settings = settingsOf(runtime);
  if (runtime === "node") {
    return markdownTable(
      ["flag", "environment", "default", "meaning"],
      settings.map(([, def]) => [
        code(`--${def.flag}`),
        code(def.env),
        defaultDoc(def, runtime, code),
        helpText(def, runtime),
      ]),
    );
  }
  return markdownTable(
    ["name", "default", "meaning"],
    settings.map(([, def]) => [code(def.env), defaultDoc(def, runtime, code), helpText(def, runtime)]),
  );
}
