/**
 * `pemba explain <entity> <permission> <subject>`: asks a running Pemba server why a check is ALLOWED or DENIED
 * (Pemba's explain endpoint, with the same key as any API call) and prints the proof as a tree, or the JSON answer
 * with --json. Exit 0 with an answer (either decision), 1 when the server answers an error, 2 for bad usage.
 */
import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { type ExplainResponse, formatExplain, parseEntityString, parseSubjectString } from "@pemba/core";
import { callerPath } from "./caller-path.ts";

const USAGE =
  "usage: pemba explain <type:id> <permission> <type:id[#relation]> [--url <url>] [--token <key>] [--tenant <id>]\n" +
  "       [--depth <n>] [--snap-token <token>] [--schema-version <version>] [--context <file.json>] [--json]\n";

export async function runExplain(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      url: { type: "string", default: "http://127.0.0.1:3476" },
      token: { type: "string" },
      tenant: { type: "string", default: "t1" },
      depth: { type: "string", default: "20" },
      "snap-token": { type: "string", default: "" },
      "schema-version": { type: "string", default: "" },
      context: { type: "string" },
      json: { type: "boolean" },
    },
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length !== 3) {
    process.stderr.write(USAGE);
    return 2;
  }
  const [entityText, permission, subjectText] = positionals;
  let entity: ReturnType<typeof parseEntityString>;
  let subject: ReturnType<typeof parseSubjectString>;
  try {
    entity = parseEntityString(entityText);
    subject = parseSubjectString(subjectText);
  } catch (e) {
    process.stderr.write(`pemba: ${(e as Error).message}\n${USAGE}`);
    return 2;
  }
  const depth = Number(values.depth);
  if (!Number.isInteger(depth)) {
    process.stderr.write(`pemba: --depth must be an integer, got "${values.depth}"\n`);
    return 2;
  }
  const body: Record<string, unknown> = {
    metadata: { depth, snap_token: values["snap-token"], schema_version: values["schema-version"] },
    entity,
    permission,
    subject,
  };
  // a Permify context object ({"tuples": [...], "attributes": [...], "data": {...}}), read from a file
  if (values.context !== undefined)
    body.context = JSON.parse(await readFile(callerPath(values.context), "utf8"));
  const out = await requestExplain(values.url, values.token, values.tenant, body);
  if (typeof out === "string") {
    process.stderr.write(`pemba: ${out}\n`);
    return 1;
  }
  process.stdout.write(values.json ? `${JSON.stringify(out, null, 2)}\n` : formatExplain(out, subject));
  return 0;
}

/**
 * POSTs an explain request to a running server: its answer, or the error to print (`the server answered <status>:
 * <message>`, the message of Pemba's error body, or the body as it is when it is not JSON).
 */
export async function requestExplain(
  url: string,
  token: string | undefined,
  tenant: string,
  body: Record<string, unknown>,
): Promise<ExplainResponse | string> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  const res = await fetch(
    `${url.replace(/\/+$/, "")}/v1/tenants/${encodeURIComponent(tenant)}/permissions/explain`,
    {
      method: "POST",
      headers,
      body: JSON.stringify(body),
    },
  );
  const text = await res.text();
  if (!res.ok) {
    let message = text;
    try {
      message = (JSON.parse(text) as { message?: string }).message ?? text;
    } catch {
      // not JSON: the text as it is
    }
    return `the server answered ${res.status}: ${message}`;
  }
  return JSON.parse(text) as ExplainResponse;
}
