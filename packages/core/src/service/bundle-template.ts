/**
 * Bundle strings are Go `text/template`s over the run arguments. Pemba supports the subset bundles use:
 * `{{.name}}` and `{{ .name }}`. A reference to an argument that was not given is ERROR_CODE_MISSING_ARGUMENT.
 */
import { PembaError } from "../errors.ts";

const ACTION = /\{\{-?\s*\.([A-Za-z_][A-Za-z0-9_]*)\s*-?\}\}/g;

export function renderBundleTemplate(template: string, args: Record<string, string>): string {
  return template.replace(ACTION, (_, name: string) => {
    const value = args[name];
    if (value === undefined) throw new PembaError("ERROR_CODE_MISSING_ARGUMENT");
    return value;
  });
}
