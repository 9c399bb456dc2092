/**
 * TEST SUPPORT ONLY (not exported; uses node:http): serves a fetch-style app on 127.0.0.1:<random port> so tests
 * talk real HTTP. The production Node adapter is @hono/node-server in packages/node-server.
 */
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";

export interface Listening {
  url: string;
  close(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of req) chunks.push(chunk as Uint8Array);
  return Buffer.concat(chunks);
}

export async function listen(app: { fetch(req: Request): Response | Promise<Response> }): Promise<Listening> {
  const server = createServer(async (req, res) => {
    const abort = new AbortController();
    res.on("close", () => abort.abort());
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) {
      if (Array.isArray(v)) for (const x of v) headers.append(k, x);
      else if (v !== undefined) headers.set(k, v);
    }
    const hasBody = req.method !== "GET" && req.method !== "HEAD";
    const request = new Request(`http://${req.headers.host}${req.url}`, {
      method: req.method,
      headers,
      body: hasBody ? await readBody(req) : undefined,
      signal: abort.signal,
    });
    const response = await app.fetch(request);
    const out: Record<string, string> = {};
    response.headers.forEach((v, k) => {
      out[k] = v;
    });
    res.writeHead(response.status, out);
    if (response.body) {
      res.flushHeaders(); // streams (watch) must not wait for their first line to send headers
      try {
        for await (const chunk of response.body) res.write(chunk);
      } catch {
        // client went away
      }
    }
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
