import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parsePresharedKeys } from "../settings/parsers.ts";
import { startTestServer, TEST_SCHEMA, type TestServer, tuple } from "./testing/harness.ts";

type SigningKey = Parameters<SignJWT["sign"]>[0];
const readT = (tenant: string) => `/v1/tenants/${tenant}/data/relationships/read`;
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

async function seed(s: TestServer, headers: Record<string, string>) {
  expect((await s.call("/v1/tenants/create", { id: "t2", name: "second" }, { headers })).status).toBe(200);
  for (const tenant of ["t1", "t2"]) {
    const w = await s.call(`/v1/tenants/${tenant}/schemas/write`, { schema: TEST_SCHEMA }, { headers });
    expect(w.status).toBe(200);
    await s.call(
      `/v1/tenants/${tenant}/data/write`,
      { metadata: {}, tuples: [tuple("document:1", "owner", `user:${tenant}`)] },
      { headers },
    );
  }
}

describe("auth: preshared keys", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({
      auth: { mode: "preshared", keys: parsePresharedKeys("admin,k1:t1,k12:t1|t2") },
    });
    await seed(s, bearer("admin"));
  });
  afterAll(() => s.close());

  it("parses `key` and `key:t1|t2`", () => {
    expect(parsePresharedKeys("admin, k1:t1|t2")).toEqual([
      { key: "admin" },
      { key: "k1", tenants: ["t1", "t2"] },
    ]);
  });

  it("no Authorization header: HTTP 500, code 2, ERROR_CODE_MISSING_BEARER_TOKEN (Permify's behaviour)", async () => {
    const r = await s.call(readT("t1"), { metadata: {}, filter: {} });
    expect(r).toMatchObject({
      status: 500,
      body: { code: 2, message: "ERROR_CODE_MISSING_BEARER_TOKEN", details: [] },
    });
  });

  it("a wrong key: 401 code 16 ERROR_CODE_INVALID_KEY", async () => {
    const r = await s.call(readT("t1"), { metadata: {}, filter: {} }, { headers: bearer("nope") });
    expect(r).toMatchObject({
      status: 401,
      body: { code: 16, message: "ERROR_CODE_INVALID_KEY", details: [] },
    });
  });

  it("a key limited to t1 reads t1 but gets 403 and no data for t2", async () => {
    const ok = await s.call(readT("t1"), { metadata: {}, filter: {} }, { headers: bearer("k1") });
    expect(ok.body).toEqual({ tuples: [tuple("document:1", "owner", "user:t1")], continuous_token: "" });
    const other = await s.call(readT("t2"), { metadata: {}, filter: {} }, { headers: bearer("k1") });
    expect(other).toMatchObject({
      status: 403,
      body: { code: 7, message: "ERROR_CODE_PERMISSION_DENIED", details: [] },
    });
    const both = await s.call(readT("t2"), { metadata: {}, filter: {} }, { headers: bearer("k12") });
    expect(both.body).toEqual({ tuples: [tuple("document:1", "owner", "user:t2")], continuous_token: "" });
  });

  it("tenancy endpoints need an unrestricted key", async () => {
    const limited = await s.call("/v1/tenants/list", {}, { headers: bearer("k12") });
    expect(limited.status).toBe(403);
    const admin = await s.call("/v1/tenants/list", {}, { headers: bearer("admin") });
    expect(admin.status).toBe(200);
  });

  it("/healthz needs no key", async () => {
    expect((await s.call("/healthz", undefined, { method: "GET" })).status).toBe(200);
  });
});

describe("auth: OIDC access tokens against a JWKS", () => {
  let s: TestServer;
  let jwks: Server;
  let wrongKey: SigningKey;
  let sign: (claims: Record<string, unknown>, opts?: { key?: SigningKey; kid?: string }) => Promise<string>;
  const issuer = "https://issuer.test";
  const audience = "pemba";
  let jwksUrl: string;
  beforeAll(async () => {
    const { publicKey, privateKey } = await generateKeyPair("RS256");
    const other = await generateKeyPair("RS256");
    const jwk = { ...(await exportJWK(publicKey)), kid: "k1", alg: "RS256", use: "sig" };
    jwks = createServer((_, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ keys: [jwk] }));
    });
    await new Promise<void>((r) => jwks.listen(0, "127.0.0.1", r));
    const port = (jwks.address() as AddressInfo).port;
    sign = (claims, opts = {}) => {
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({ iss: issuer, aud: audience, iat: now, exp: now + 600, sub: "svc", ...claims })
        .setProtectedHeader({ alg: "RS256", kid: opts.kid ?? "k1" })
        .sign(opts.key ?? privateKey);
    };
    jwksUrl = `http://127.0.0.1:${port}/jwks.json`;
    s = await startTestServer({ auth: { mode: "oidc", issuer, audience, jwksUrl } });
    wrongKey = other.privateKey;
    await seed(s, bearer(await sign({})));
  });
  afterAll(async () => {
    await s.close();
    await new Promise((r) => jwks.close(r));
  });

  const read = async (token: string, tenant = "t1") =>
    s.call(readT(tenant), { metadata: {}, filter: {} }, { headers: bearer(token) });
  const error = (message: string) => ({ status: 401, body: { code: 16, message, details: [] } });

  it("a valid token is accepted", async () => {
    const r = await read(await sign({}));
    expect(r.body).toEqual({ tuples: [tuple("document:1", "owner", "user:t1")], continuous_token: "" });
  });

  it("expired -> ERROR_CODE_INVALID_CLAIMS", async () => {
    const now = Math.floor(Date.now() / 1000);
    expect(await read(await sign({ exp: now - 3600, iat: now - 7200 }))).toMatchObject(
      error("ERROR_CODE_INVALID_CLAIMS"),
    );
  });

  it("no exp -> ERROR_CODE_INVALID_CLAIMS (exp is required by default)", async () => {
    expect(await read(await sign({ exp: undefined }))).toMatchObject(error("ERROR_CODE_INVALID_CLAIMS"));
  });

  it("iat an hour in the future -> ERROR_CODE_INVALID_CLAIMS; within the 5 s tolerance -> accepted", async () => {
    const now = Math.floor(Date.now() / 1000);
    expect(await read(await sign({ iat: now + 3600, exp: now + 7200 }))).toMatchObject(
      error("ERROR_CODE_INVALID_CLAIMS"),
    );
    expect(await read(await sign({ iat: now + 60 }))).toMatchObject(error("ERROR_CODE_INVALID_CLAIMS"));
    expect((await read(await sign({ iat: now + 3 }))).status).toBe(200);
    expect((await read(await sign({ iat: undefined }))).status).toBe(200);
  });

  it("exp within the tolerance behind the clock is still accepted; past it refused", async () => {
    const now = Math.floor(Date.now() / 1000);
    expect((await read(await sign({ iat: now - 60, exp: now - 2 }))).status).toBe(200);
    expect(await read(await sign({ iat: now - 60, exp: now - 30 }))).toMatchObject(
      error("ERROR_CODE_INVALID_CLAIMS"),
    );
  });

  it("requireExp false accepts a token without exp; clockToleranceSeconds widens the iat skew", async () => {
    const relaxed = await startTestServer({
      auth: { mode: "oidc", issuer, audience, jwksUrl, requireExp: false, clockToleranceSeconds: 120 },
    });
    try {
      await seed(relaxed, bearer(await sign({})));
      const now = Math.floor(Date.now() / 1000);
      const call = async (token: string) =>
        (await relaxed.call(readT("t1"), { metadata: {}, filter: {} }, { headers: bearer(token) })).status;
      expect(await call(await sign({ exp: undefined }))).toBe(200);
      expect(await call(await sign({ iat: now + 60 }))).toBe(200);
      expect(await call(await sign({ iat: now + 3600 }))).toBe(401);
    } finally {
      await relaxed.close();
    }
  });

  it("nbf in the future -> ERROR_CODE_INVALID_CLAIMS", async () => {
    const now = Math.floor(Date.now() / 1000);
    expect(await read(await sign({ nbf: now + 3600 }))).toMatchObject(error("ERROR_CODE_INVALID_CLAIMS"));
  });

  it("wrong issuer -> ERROR_CODE_INVALID_ISSUER; wrong audience -> ERROR_CODE_INVALID_AUDIENCE", async () => {
    expect(await read(await sign({ iss: "https://evil.test" }))).toMatchObject(
      error("ERROR_CODE_INVALID_ISSUER"),
    );
    expect(await read(await sign({ aud: "someone-else" }))).toMatchObject(
      error("ERROR_CODE_INVALID_AUDIENCE"),
    );
  });

  it("signed by another key, or not a JWT -> ERROR_CODE_INVALID_BEARER_TOKEN", async () => {
    expect(await read(await sign({}, { key: wrongKey }))).toMatchObject(
      error("ERROR_CODE_INVALID_BEARER_TOKEN"),
    );
    expect(await read("not-a-jwt")).toMatchObject(error("ERROR_CODE_INVALID_BEARER_TOKEN"));
  });

  it("a token with a pemba_tenants claim is limited to those tenants", async () => {
    const token = await sign({ pemba_tenants: ["t1"] });
    expect((await read(token, "t1")).status).toBe(200);
    expect(await read(token, "t2")).toMatchObject({
      status: 403,
      body: { code: 7, message: "ERROR_CODE_PERMISSION_DENIED", details: [] },
    });
  });
});
