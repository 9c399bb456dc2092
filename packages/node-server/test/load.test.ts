/** `pemba load`: a validation file into a tenant of a running server, in batches, with a progress line. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliProcess, runCli, startServe } from "../src/testing/cli-process.ts";

const KEY = "load-test-key";
const PID_BETH = "CiRmZDM2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs";

describe("pemba load", () => {
  let server: CliProcess & { url: string };
  beforeAll(async () => {
    server = await startServe(["--database", "memory:", "--auth-keys", KEY]);
  });
  afterAll(async () => {
    if (server !== undefined && server.child.exitCode === null) {
      server.child.kill("SIGTERM");
      await server.exited;
    }
  });

  it("writes the schema and 23 relationships in batches of 7 into a new tenant, then they answer", async () => {
    const out = await runCli([
      "load",
      "examples/authzen/gateway/scenario.yaml",
      "--url",
      server.url,
      "--tenant",
      "gw",
      "--token",
      KEY,
      "--batch",
      "7",
    ]);
    expect(out.code).toBe(0);
    expect(out.stderr.trim().split("\n")).toEqual([
      "loaded 7/23 rows",
      "loaded 14/23 rows",
      "loaded 21/23 rows",
      "loaded 23/23 rows",
    ]);
    expect(out.stdout).toMatch(
      /^tenant gw: schema \w+, 23 relationships, 0 attributes in [\d.]+ ms; snap token \S+\n$/,
    );
    const ask = async (name: string) => {
      const res = await fetch(`${server.url}/v1/tenants/gw/access/v1/evaluation`, {
        method: "POST",
        headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
        body: JSON.stringify({
          subject: { type: "identity", id: PID_BETH },
          action: { name },
          resource: { type: "route", id: "/todos" },
        }),
      });
      return ((await res.json()) as { decision: boolean }).decision;
    };
    expect(await ask("GET")).toBe(true);
    expect(await ask("POST")).toBe(false);
  });

  it("a wrong key: exit 1 with the server's answer", async () => {
    const out = await runCli([
      "load",
      "examples/authzen/gateway/scenario.yaml",
      "--url",
      server.url,
      "--tenant",
      "gw",
      "--token",
      "nope",
    ]);
    expect(out.code).toBe(1);
    expect(out.stderr).toContain("/schemas/write: HTTP 401");
  });

  it("no file: the usage line, exit 2", async () => {
    const out = await runCli(["load"]);
    expect(out.code).toBe(2);
    expect(out.stderr).toContain("usage: pemba load <file.yaml>");
  });
});
