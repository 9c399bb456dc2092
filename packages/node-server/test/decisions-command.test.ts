/**
 * `pemba decisions` on the log a real `pemba serve --decision-log <file>` wrote (both child processes): filters, and
 * `--explain` re-running a logged decision at its snap token after the data changed.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliProcess, runCli, startServe } from "../src/testing/cli-process.ts";
import { checkBody, post, tuple } from "./api-client.ts";

const SCHEMA = `entity user {}
entity document {
  relation viewer @user
  permission view = viewer
}
`;
const KEY = { authorization: "Bearer secret1" };

describe("pemba decisions", () => {
  let dir: string;
  let log: string;
  let server: CliProcess & { url: string };
  let lines: string[];
  const decisions = (args: string[]) => runCli(["decisions", log, ...args]);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "pemba-decisions-cli-"));
    log = join(dir, "decisions.ndjson");
    server = await startServe([
      "--database",
      join(dir, "authz.db"),
      "--auth-keys",
      "secret1",
      "--decision-log",
      log,
    ]);
    const write = (tuples: unknown[]) =>
      post(server.url, "/v1/tenants/t1/data/write", { metadata: {}, tuples }, KEY);
    expect((await post(server.url, "/v1/tenants/t1/schemas/write", { schema: SCHEMA }, KEY)).status).toBe(
      200,
    );
    expect((await write([tuple("document:1", "viewer", "user:bob")])).status).toBe(200);
    const check = (subject: string) =>
      post(server.url, "/v1/tenants/t1/permissions/check", checkBody("document:1", "view", subject), KEY);
    expect((await check("user:bob")).body.can).toBe("CHECK_RESULT_ALLOWED");
    expect((await check("user:carol")).body.can).toBe("CHECK_RESULT_DENIED");
    // carol is allowed from now on: only a re-run at the logged snap says DENIED again
    expect((await write([tuple("document:1", "viewer", "user:carol")])).status).toBe(200);
    expect((await check("user:carol")).body.can).toBe("CHECK_RESULT_ALLOWED");
    for (let i = 0; i < 100; i++) {
      lines = readLines(log);
      if (lines.length === 3) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(lines).toHaveLength(3);
  });
  afterAll(async () => {
    if (server.child.exitCode === null) {
      server.child.kill("SIGTERM");
      await server.exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it("prints the records that pass the filters, as logged", async () => {
    expect((await decisions([])).stdout).toBe(`${lines.join("\n")}\n`);
    expect((await decisions(["--decision", "denied"])).stdout).toBe(`${lines[1]}\n`);
    expect((await decisions(["--subject", "user:carol"])).stdout).toBe(`${lines[1]}\n${lines[2]}\n`);
    expect((await decisions(["--subject", "user:carol", "--decision", "allowed"])).stdout).toBe(
      `${lines[2]}\n`,
    );
    expect((await decisions(["--entity", "document:1", "--tenant", "t2"])).stdout).toBe("");
    expect((await decisions(["--since", "1h", "--limit", "1"])).stdout).toBe(`${lines[0]}\n`);
    const first = JSON.parse(lines[1]!) as { time: string };
    expect((await decisions(["--until", first.time])).stdout).toBe(`${lines[0]}\n`);
    const bad = await decisions(["--decision", "maybe"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--decision must be allowed, denied or lookup, got "maybe"');
  });

  it("--explain re-runs a logged decision at its snap token and shows the proof", async () => {
    const r = await decisions([
      "--decision",
      "denied",
      "--explain",
      "--url",
      server.url,
      "--token",
      "secret1",
    ]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const record = JSON.parse(lines[1]!) as { snap_token: string };
    expect(r.stdout).toBe(
      [
        lines[1],
        `  re-run at snap ${record.snap_token}: DENIED (logged DENIED)`,
        "  DENIED document:1#view for user:carol (check_count 2)",
        "  ✗ permission document:1#view",
        "  └─ ✗ relation document:1#viewer — no tuple document:1#viewer@user:carol",
        "",
      ].join("\n"),
    );
  });

  it("--explain exits 1 when a re-run decides otherwise than the record", async () => {
    const forged = join(dir, "forged.ndjson");
    writeFileSync(forged, `${lines[1]!.replace("CHECK_RESULT_DENIED", "CHECK_RESULT_ALLOWED")}\n`);
    const r = await runCli(["decisions", forged, "--explain", "--url", server.url, "--token", "secret1"]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(": DENIED (logged ALLOWED) DIFFERS\n");
  });

  it("--explain re-runs an AuthZEN evaluation's record as the check it was", async () => {
    const evaluated = await post(
      server.url,
      "/v1/tenants/t1/access/v1/evaluation",
      {
        subject: { type: "user", id: "dave" },
        action: { name: "view" },
        resource: { type: "document", id: "1" },
      },
      KEY,
    );
    expect(evaluated.body).toEqual({ decision: false });
    let record: string | undefined;
    for (let i = 0; i < 100 && record === undefined; i++) {
      record = readLines(log).find((l) => l.includes('"api":"authzen_evaluation"'));
      if (record === undefined) await new Promise((r) => setTimeout(r, 20));
    }
    expect(JSON.parse(record!)).toMatchObject({
      subject: "user:dave",
      permission: "view",
      entity: "document:1",
      decision: "CHECK_RESULT_DENIED",
      depth: 50,
    });
    const r = await decisions([
      "--api",
      "authzen_evaluation",
      "--explain",
      "--url",
      server.url,
      "--token",
      "secret1",
    ]);
    expect(r.code).toBe(0);
    const { snap_token } = JSON.parse(record!) as { snap_token: string };
    expect(r.stdout).toBe(
      [
        record,
        `  re-run at snap ${snap_token}: DENIED (logged DENIED)`,
        "  DENIED document:1#view for user:dave (check_count 2)",
        "  ✗ permission document:1#view",
        "  └─ ✗ relation document:1#viewer — no tuple document:1#viewer@user:dave",
        "",
      ].join("\n"),
    );
  });
});

function readLines(file: string): string[] {
  try {
    return readFileSync(file, "utf8")
      .split("\n")
      .filter((l) => l !== "");
  } catch {
    return [];
  }
}
