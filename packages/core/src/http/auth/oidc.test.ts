import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { JWKS_REFRESH_AHEAD, OidcAuthenticator } from "./oidc.ts";

describe("OidcAuthenticator: JWKS reloads", () => {
  const issuer = "https://issuer.test";
  const audience = "pemba";
  const maxAge = 600_000;
  let server: Server;
  let jwksUrl: string;
  let sign: () => Promise<string>;
  /** JWKS requests the server received. */
  let fetches = 0;
  /** While set, JWKS responses are held here until the test sends them. */
  let held: (() => void)[] | undefined;
  let received: (() => void) | undefined;

  beforeAll(async () => {
    const { publicKey, privateKey } = await generateKeyPair("RS256");
    const jwk = { ...(await exportJWK(publicKey)), kid: "k1", alg: "RS256", use: "sig" };
    server = createServer((_: IncomingMessage, res: ServerResponse) => {
      fetches++;
      const send = () => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ keys: [jwk] }));
      };
      if (held === undefined) send();
      else held.push(send);
      received?.();
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    jwksUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks.json`;
    sign = () => {
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({ iss: issuer, aud: audience, iat: now, exp: now + 3600, sub: "svc" })
        .setProtectedHeader({ alg: "RS256", kid: "k1" })
        .sign(privateKey);
    };
  });
  afterEach(() => {
    for (const send of held ?? []) send();
    held = undefined;
    fetches = 0;
    vi.useRealTimers();
  });
  afterAll(() => new Promise((r) => server.close(r)));

  it("reloads the key set in the background before it expires: no request waits on the reload", async () => {
    const t0 = Date.now();
    vi.useFakeTimers({ toFake: ["Date"], now: t0 });
    const auth = new OidcAuthenticator({ issuer, audience, jwksUrl, jwksCacheMaxAgeMs: maxAge });
    const bearer = async () => `Bearer ${await sign()}`;

    // the first request loads the set (and waits for it)
    expect((await auth.authenticate(await bearer())).name).toBe("svc");
    expect(fetches).toBe(1);
    // until the refresh point, the cached set answers
    vi.setSystemTime(t0 + maxAge * JWKS_REFRESH_AHEAD - 1);
    await auth.authenticate(await bearer());
    expect(fetches).toBe(1);

    // at the refresh point the reload starts, and the JWKS server holds its answer: 50 requests all complete
    // on the keys still trusted, none waits on the reload
    held = [];
    const reloadReceived = new Promise<void>((r) => {
      received = r;
    });
    vi.setSystemTime(t0 + maxAge * JWKS_REFRESH_AHEAD);
    const tokens = await Promise.all(Array.from({ length: 50 }, bearer));
    const principals = await Promise.all(tokens.map((t) => auth.authenticate(t)));
    expect(principals.map((p) => p.name)).toEqual(Array(50).fill("svc"));
    await reloadReceived;
    expect(fetches).toBe(2);
    expect(held.length).toBe(1);

    // the reload is answered; past the first set's expiry the reloaded set answers without another fetch
    for (const send of held) send();
    held = undefined;
    vi.setSystemTime(t0 + maxAge + 1);
    expect((await auth.authenticate(await bearer())).name).toBe("svc");
    expect(fetches).toBe(2);
  });
});
