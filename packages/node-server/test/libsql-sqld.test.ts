/**
 * `pemba` on a real libSQL server (sqld) over http://, as users run it: migrate and serve with
 * `--database http://...?authToken=<JWT>` (sqld's Ed25519 JWT auth), on a primary and through a replica that
 * forwards writes to it. Without an sqld binary this reports "real sqld NOT verified".
 */
import {
  describeWithSqld,
  type SqldKey,
  type SqldServer,
  sqldKey,
  startSqld,
} from "@pemba/core/testing/node";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type CliProcess, runCli, startServe } from "../src/testing/cli-process.ts";
import { check, tuple, writeSchema, writeTuples } from "./api-client.ts";

describeWithSqld("pemba on a real sqld over http://", () => {
  let primary: SqldServer;
  let replica: SqldServer | undefined;
  let key: SqldKey;
  let token: string;
  const servers: CliProcess[] = [];

  beforeAll(async () => {
    key = await sqldKey();
    token = await key.token();
    primary = await startSqld({ keys: [key] });
  });
  afterAll(async () => {
    for (const s of servers) {
      if (s.child.exitCode === null) {
        s.child.kill("SIGTERM");
        await s.exited;
      }
    }
    await replica?.stop();
    await primary?.stop();
  });

  const withToken = (url: string) => `${url}?authToken=${token}`;

  it("migrate --database http://...: the tables on the server, the token masked in the output", async () => {
    const refused = await runCli(["migrate", "--database", primary.url]);
    expect(refused.code).toBe(1);
    // a server that checks tokens, and none given
    expect(refused.stderr).toBe("pemba: SERVER_ERROR: Server returned HTTP status 401 [SERVER_ERROR]\n");

    const r = await runCli(["migrate", "--database", withToken(primary.url)]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`migrate ${primary.url}/?authToken=***`);
    expect(r.stdout).not.toContain(token);
    const tables = await primary.query(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('tuples', 'transactions') ORDER BY name",
      token,
    );
    expect(tables).toEqual([{ name: "transactions" }, { name: "tuples" }]);
  });

  it("serve on the primary: schema, data, checks, and the rows are in sqld", async () => {
    const server = await startServe(["--database", withToken(primary.url)]);
    servers.push(server);
    const startup = await server.waitForLog((e) => typeof e.url === "string");
    expect(startup.store).toBe("libsql");
    expect(JSON.stringify(startup)).not.toContain(token);
    await writeSchema(server.url);
    await writeTuples(server.url, [tuple("document:7", "viewer", "user:dana")]);
    expect(await check(server.url, "document:7", "view", "user:dana")).toBe("CHECK_RESULT_ALLOWED");
    expect(await check(server.url, "document:7", "edit", "user:dana")).toBe("CHECK_RESULT_DENIED");
    expect(
      await primary.query(
        "SELECT entity_id, relation, subject_id FROM tuples WHERE entity_type = 'document'",
        token,
      ),
    ).toEqual([{ entity_id: "7", relation: "viewer", subject_id: "dana" }]);
    server.child.kill("SIGTERM");
    expect((await server.exited).code).toBe(0);
  });

  it("serve through a replica: it reads the replicated data, and its writes reach the primary", async () => {
    replica = await startSqld({ keys: [key], primaryGrpcUrl: primary.grpcUrl });
    const server = await startServe(["--database", withToken(replica.url)]);
    servers.push(server);
    await server.waitForLog((e) => typeof e.url === "string");
    // the replica catches up within milliseconds; a bounded number of polls
    let polls = 0;
    while (
      (await check(server.url, "document:7", "view", "user:dana").catch(() => "")) !== "CHECK_RESULT_ALLOWED"
    ) {
      if (++polls > 200) throw new Error("the replica never served the primary's data");
      await new Promise((done) => setTimeout(done, 25));
    }
    await writeTuples(server.url, [tuple("document:8", "owner", "user:erin")]);
    expect(
      await primary.query("SELECT entity_id, subject_id FROM tuples WHERE entity_id = '8'", token),
    ).toEqual([{ entity_id: "8", subject_id: "erin" }]);
    server.child.kill("SIGTERM");
    expect((await server.exited).code).toBe(0);
  }, 60_000);
});
