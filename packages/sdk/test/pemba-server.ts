/** A real `pemba serve` (the bundled CLI, on a throwaway SQLite file) for the SDK's integration tests. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServe } from "@pemba/node-server/testing";

export interface PembaServer {
  url: string;
  close(): Promise<void>;
}

export async function startPemba(
  args: string[] = [],
  env: Record<string, string> = {},
): Promise<PembaServer> {
  const dir = mkdtempSync(join(tmpdir(), "pemba-sdk-"));
  const proc = await startServe(["--database", join(dir, "authz.db"), ...args], env);
  return {
    url: proc.url,
    async close() {
      if (proc.child.exitCode === null) proc.child.kill("SIGTERM");
      await proc.exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The schema the SDK tests use: relations with subject sets, attributes, a rule-free permission tree. */
export const SCHEMA = `entity user {}

entity organization {
  relation admin @user
  relation member @user
}

entity document {
  relation org @organization
  relation owner @user
  relation viewer @user @organization#member
  attribute public boolean
  attribute tags string[]
  permission edit = owner or org.admin
  permission view = edit or viewer or public
}
`;

/** A fetch that records every request's path and JSON body. */
export function recordingFetch(): { fetch: typeof fetch; calls: { path: string; body: unknown }[] } {
  const calls: { path: string; body: unknown }[] = [];
  return {
    calls,
    fetch: (input, init) => {
      const url = new URL(String(input));
      calls.push({ path: url.pathname, body: init?.body ? JSON.parse(String(init.body)) : undefined });
      return fetch(input, init);
    },
  };
}
