/**
 * A local OIDC issuer for JWT-authenticated machine clients: an ES256 key pair made at start, its JWKS served on
 * 127.0.0.1 (GET /.well-known/jwks.json), and access tokens for client ids signed with it (jose). Pemba runs in JWKS
 * mode against it: `pemba serve --jwks-url <jwksUrl> --issuer <issuer> --audience <audience>`.
 */
import { createServer } from "node:http";
import { exportJWK, generateKeyPair, SignJWT } from "jose";

export interface Issuer {
  issuer: string;
  audience: string;
  jwksUrl: string;
  /** How many times the JWKS was fetched (Pemba caches it). */
  fetches(): number;
  /** When each JWKS fetch arrived (ms since the epoch), in order. */
  fetchTimes(): readonly number[];
  /** An access token for `clientId` (sub), valid for `ttlSeconds`. */
  token(clientId: string, ttlSeconds: number): Promise<string>;
  stop(): Promise<void>;
}

const KID = "pemba-loadtest-1";

export async function startIssuer(audience = "pemba"): Promise<Issuer> {
  const { publicKey, privateKey } = await generateKeyPair("ES256");
  const jwks = JSON.stringify({
    keys: [{ ...(await exportJWK(publicKey)), kid: KID, alg: "ES256", use: "sig" }],
  });
  let fetches = 0;
  const fetchTimes: number[] = [];
  const server = createServer((request, response) => {
    if (request.url === "/.well-known/jwks.json") {
      fetches++;
      fetchTimes.push(Date.now());
      response.writeHead(200, { "content-type": "application/json" }).end(jwks);
    } else response.writeHead(404).end();
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address() as { port: number };
  const issuer = `http://127.0.0.1:${port}`;
  return {
    issuer,
    audience,
    jwksUrl: `${issuer}/.well-known/jwks.json`,
    fetches: () => fetches,
    fetchTimes: () => fetchTimes,
    token: (clientId, ttlSeconds) =>
      new SignJWT({})
        .setProtectedHeader({ alg: "ES256", kid: KID })
        .setIssuer(issuer)
        .setAudience(audience)
        .setSubject(clientId)
        .setIssuedAt()
        .setExpirationTime(`${Math.ceil(ttlSeconds)}s`)
        .sign(privateKey),
    stop: () =>
      new Promise((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}
