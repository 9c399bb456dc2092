/**
 * The Worker at the edge, in workerd (`wrangler dev`, local D1): the in-isolate replica and the per-request log
 * line. Every request writes ONE JSON line (route, status, decision, statements, rows read, ms); the test reads
 * those lines from wrangler's output and asserts the statements each check ran:
 * - replica on, refresh window 0 (every check looks at the database): once a check's keys are in the working set,
 *   exactly ONE round trip per check (the freshness look and the feed, which also renews the cached head schema);
 * - replica off (PEMBA_REPLICA=off): checks go to D1, one snap statement and at most one read per walk level
 *   (Permify's load-test schema: content#view <= 2 reads, interaction#view <= 3).
 * Auth as on Node: preshared keys on the first Worker, OIDC access tokens verified against a JWKS on the second.
 */
import { webcrypto } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import {
  expectedView as expectedLoadTestView,
  LOAD_TEST_SCHEMA,
  loadTestData,
  VIEW_PAIRS,
} from "@pemba/core/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startWranglerDev, type WranglerDev } from "../src/testing/wrangler-dev.ts";

const IDS = 40;
const KEY = "edge-key";
const CHECK_ROUTE = "/v1/tenants/:tenant_id/permissions/check";

interface LogLine {
  method: string;
  route: string;
  status: number;
  decision?: string;
  statements: number;
  by_kind: Record<string, number>;
  rows_read: number;
  ms: number;
}

/** The request lines wrangler printed so far (the Worker's console.log output). */
function requestLines(w: WranglerDev): LogLine[] {
  return w
    .output()
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l.startsWith("{") && l.includes('"statements"'))
    .map((l) => JSON.parse(l) as LogLine);
}

/**
 * The number of request lines once wrangler has forwarded every line so far (its forwarding is asynchronous: a
 * line may show up after the response), i.e. when the count stays the same for 300 ms.
 */
async function settledLines(w: WranglerDev): Promise<number> {
  let count = requestLines(w).length;
  for (;;) {
    await new Promise((r) => setTimeout(r, 300));
    const now = requestLines(w).length;
    if (now === count) return count;
    count = now;
  }
}

/** Waits until `count` more request lines than `from` were printed. */
async function linesAfter(w: WranglerDev, from: number, count: number): Promise<LogLine[]> {
  await expect
    .poll(() => requestLines(w).length, { timeout: 10_000, interval: 20 })
    .toBeGreaterThanOrEqual(from + count);
  await settledLines(w);
  const lines = requestLines(w).slice(from);
  expect(lines).toHaveLength(count);
  return lines;
}

const expectedView = (entity: number, user: number): boolean => expectedLoadTestView(IDS, entity, user);
const decision = (allowed: boolean) => (allowed ? "CHECK_RESULT_ALLOWED" : "CHECK_RESULT_DENIED");
const checkBody = (type: string, entity: number, user: number) => ({
  metadata: { depth: 20 },
  entity: { type, id: String(entity) },
  permission: "view",
  subject: { type: "user", id: String(user) },
});
const PAIRS = VIEW_PAIRS;

async function seed(w: WranglerDev, headers: Record<string, string>) {
  const schema = await w.call("/v1/tenants/t1/schemas/write", { schema: LOAD_TEST_SCHEMA }, headers);
  expect(schema).toMatchObject({ status: 200 });
  const { tuples, attributes } = loadTestData(IDS);
  // attribute values in the seed script's wire form
  const wire = attributes.map((a) => ({
    entity: a.entity,
    attribute: a.attribute,
    value: { boolean: a.value.data },
  }));
  const write = await w.call(
    "/v1/tenants/t1/data/write",
    { metadata: {}, tuples, attributes: wire },
    headers,
  );
  expect(write.status).toBe(200);
}

describe("Worker on workerd: replica on, refresh window 0, preshared key", () => {
  let w: WranglerDev;
  const auth = { authorization: `Bearer ${KEY}` };
  beforeAll(async () => {
    w = await startWranglerDev(
      { PEMBA_AUTH_KEYS: KEY, PEMBA_REPLICA_REFRESH: "0", PEMBA_LOG_LEVEL: "info" },
      90_000,
      undefined,
      "log",
    );
    await seed(w, auth);
  });
  afterAll(async () => {
    await w?.close();
  });

  it("a check of keys in the working set runs exactly one freshness look (one batch: the look and the feed); every request has its line", async () => {
    // the first pass fills the working set with the keys these checks read
    for (const type of ["content", "interaction"]) {
      for (const [entity, user] of PAIRS) {
        const res = await w.call("/v1/tenants/t1/permissions/check", checkBody(type, entity, user), auth);
        expect((res.body as { can: string }).can).toBe(decision(expectedView(entity, user)));
      }
    }
    const from = await settledLines(w);
    const expected: string[] = [];
    for (const type of ["content", "interaction"]) {
      for (const [entity, user] of PAIRS) {
        const res = await w.call("/v1/tenants/t1/permissions/check", checkBody(type, entity, user), auth);
        expect(res.status).toBe(200);
        expect((res.body as { can: string }).can).toBe(decision(expectedView(entity, user)));
        expected.push(decision(expectedView(entity, user)));
      }
    }
    const lines = await linesAfter(w, from, expected.length);
    expect(lines.map((l) => l.decision)).toEqual(expected);
    for (const line of lines) {
      expect(line).toMatchObject({ method: "POST", route: CHECK_ROUTE, status: 200 });
      // one look at the database per check (one D1 batch: the look and the change feed after the copy), which also
      // keeps the cached head schema fresh
      expect(line.by_kind).toEqual({ freshness: 2 });
      expect(line.statements).toBe(2);
      expect(line.rows_read).toBeGreaterThanOrEqual(1);
      expect(line.ms).toBeGreaterThanOrEqual(0);
    }
  });

  it("refused requests are logged too: status, no decision, no statement", async () => {
    const from = await settledLines(w);
    const res = await w.call("/v1/tenants/t1/permissions/check", checkBody("content", 0, 0), {
      authorization: "Bearer wrong",
    });
    expect(res.status).toBe(401);
    const [line] = await linesAfter(w, from, 1);
    expect(line).toMatchObject({
      method: "POST",
      route: CHECK_ROUTE,
      status: 401,
      statements: 0,
      rows_read: 0,
    });
    expect(line.decision).toBeUndefined();
  });
});

/** An RS256 key pair, its JWKS, and signed access tokens (WebCrypto, as jose would sign them). */
async function oidcIssuer() {
  const { subtle } = webcrypto;
  const pair = (await subtle.generateKey(
    {
      name: "RSASSA-PKCS1-v1_5",
      modulusLength: 2048,
      publicExponent: new Uint8Array([1, 0, 1]),
      hash: "SHA-256",
    },
    true,
    ["sign", "verify"],
  )) as webcrypto.CryptoKeyPair;
  const jwk = {
    ...(await subtle.exportKey("jwk", pair.publicKey)),
    kid: "k1",
    alg: "RS256",
    use: "sig",
  };
  const b64url = (data: string | ArrayBuffer) =>
    Buffer.from(typeof data === "string" ? Buffer.from(data) : new Uint8Array(data)).toString("base64url");
  const sign = async (claims: Record<string, unknown>) => {
    const now = Math.floor(Date.now() / 1000);
    const input = `${b64url(JSON.stringify({ alg: "RS256", kid: "k1", typ: "JWT" }))}.${b64url(
      JSON.stringify({ iat: now, exp: now + 600, ...claims }),
    )}`;
    const signature = await subtle.sign("RSASSA-PKCS1-v1_5", pair.privateKey, Buffer.from(input));
    return `${input}.${b64url(signature)}`;
  };
  return { jwks: { keys: [jwk] }, sign };
}

describe("Worker on workerd: replica off, OIDC access tokens (JWKS)", () => {
  let w: WranglerDev;
  let jwksServer: Server;
  let bearer: Record<string, string>;
  const issuer = "https://issuer.example";
  const audience = "pemba-edge";
  let sign: (claims: Record<string, unknown>) => Promise<string>;
  beforeAll(async () => {
    const oidc = await oidcIssuer();
    sign = oidc.sign;
    jwksServer = createServer((_, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(oidc.jwks));
    });
    await new Promise<void>((r) => jwksServer.listen(0, "127.0.0.1", r));
    const port = (jwksServer.address() as AddressInfo).port;
    w = await startWranglerDev(
      {
        PEMBA_REPLICA: "off",
        PEMBA_LOG_LEVEL: "info",
        PEMBA_JWKS_URL: `http://127.0.0.1:${port}/jwks.json`,
        PEMBA_ISSUER: issuer,
        PEMBA_AUDIENCE: audience,
      },
      90_000,
      undefined,
      "log",
    );
    bearer = { authorization: `Bearer ${await sign({ iss: issuer, aud: audience, sub: "svc" })}` };
    await seed(w, bearer);
  });
  afterAll(async () => {
    await w?.close();
    await new Promise((r) => jwksServer?.close(r));
  });

  it("checks read D1: one snap statement, then content#view <= 2 reads and interaction#view <= 3", async () => {
    await w.call("/v1/tenants/t1/permissions/check", checkBody("content", 0, 0), bearer); // schema cached
    for (const [type, maxReads] of [
      ["content", 2],
      ["interaction", 3],
    ] as const) {
      const from = await settledLines(w);
      for (const [entity, user] of PAIRS) {
        const res = await w.call("/v1/tenants/t1/permissions/check", checkBody(type, entity, user), bearer);
        expect((res.body as { can: string }).can).toBe(decision(expectedView(entity, user)));
      }
      const lines = await linesAfter(w, from, PAIRS.length);
      for (const line of lines) {
        expect(line).toMatchObject({ route: CHECK_ROUTE, status: 200 });
        const { head_snap, query_reads = 0, query_tuples = 0, read_schema = 0, ...other } = line.by_kind;
        expect(other).toEqual({});
        expect(head_snap).toBe(1);
        expect(query_reads + query_tuples).toBeGreaterThanOrEqual(1);
        expect(query_reads + query_tuples).toBeLessThanOrEqual(maxReads);
        // the head schema's TTL refresh (1 s), at most once per request
        expect(read_schema).toBeLessThanOrEqual(1);
        expect(line.statements).toBe(head_snap + query_reads + query_tuples + read_schema);
      }
      console.log(
        `D1 (no replica) ${type}#view statements per check: ${lines.map((l) => JSON.stringify(l.by_kind)).join(" ")}`,
      );
    }
  });

  it("a token for another audience or signed by another key is refused (401), and logged", async () => {
    const from = await settledLines(w);
    const wrongAudience = await sign({ iss: issuer, aud: "someone-else", sub: "svc" });
    const other = await oidcIssuer();
    const wrongKey = await other.sign({ iss: issuer, aud: audience, sub: "svc" });
    for (const token of [wrongAudience, wrongKey]) {
      const res = await w.call("/v1/tenants/t1/permissions/check", checkBody("content", 0, 0), {
        authorization: `Bearer ${token}`,
      });
      expect(res.status).toBe(401);
    }
    const lines = await linesAfter(w, from, 2);
    expect(lines.map((l) => [l.status, l.statements])).toEqual([
      [401, 0],
      [401, 0],
    ]);
  });
});
