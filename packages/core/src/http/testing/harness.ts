/** TEST SUPPORT ONLY: a Pemba app over real HTTP on a MemoryStore (or a given store), plus request helpers. */

import { PembaService, type ServiceOptions } from "../../service/index.ts";
import { MemoryStore } from "../../store/memory/memory-store.ts";
import type { Store } from "../../store/store.ts";
import { type AppOptions, createApp } from "../app.ts";
import { listen } from "./node-listen.ts";

export interface TestServer {
  url: string;
  service: PembaService;
  store: Store;
  /** POST (or `method`) JSON; returns status, parsed JSON body and headers. */
  call(
    path: string,
    body?: unknown,
    init?: { method?: string; headers?: Record<string, string>; raw?: string },
  ): Promise<{ status: number; body: unknown; headers: Headers }>;
  close(): Promise<void>;
}

export async function startTestServer(
  opts: Omit<AppOptions, "service"> & { store?: Store; serviceOptions?: ServiceOptions } = {},
): Promise<TestServer> {
  const store = opts.store ?? new MemoryStore();
  const service = new PembaService(store, opts.serviceOptions);
  const app = createApp({ ...opts, service });
  const server = await listen(app);
  return {
    url: server.url,
    service,
    store,
    async call(path, body, init = {}) {
      const method = init.method ?? "POST";
      const res = await fetch(server.url + path, {
        method,
        headers: { "content-type": "application/json", ...init.headers },
        body: init.raw ?? (body === undefined || method === "GET" ? undefined : JSON.stringify(body)),
      });
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = text === "" ? "" : JSON.parse(text);
      } catch {
        // not JSON (e.g. NDJSON or HTML)
      }
      return { status: res.status, body: parsed, headers: res.headers };
    },
    close: server.close,
  };
}

/** The schema most HTTP tests use. */
export const TEST_SCHEMA = `entity user {}

entity organization {
  relation admin @user
  relation member @user @organization#member
  permission view = admin or member
}

entity document {
  relation org @organization
  relation owner @user
  relation viewer @user @organization#member
  attribute is_public boolean
  attribute score integer
  permission edit = owner or org.admin
  permission view = edit or viewer or is_public
  permission ranked = high_score(score)
}

rule high_score(score integer) {
  score >= context.data.min
}`;

export const tuple = (entity: string, relation: string, subject: string) => {
  const [et, eid] = entity.split(":");
  const [st, rest] = subject.split(":");
  const [sid, srel = ""] = rest.split("#");
  return { entity: { type: et, id: eid }, relation, subject: { type: st, id: sid, relation: srel } };
};

/** `POST <tenantPath>/watch` from a snap token; `firstLine()` reads the stream's first NDJSON line, then ends it. */
export async function openWatch(s: TestServer, tenantPath: string, snapToken: string) {
  const abort = new AbortController();
  const res = await fetch(`${s.url}${tenantPath}/watch`, {
    method: "POST",
    body: JSON.stringify({ snap_token: snapToken }),
    signal: abort.signal,
  });
  return {
    res,
    async firstLine(): Promise<{ changes: { snap_token: string; data_changes: unknown[] } }> {
      const reader = res.body!.getReader();
      let text = "";
      while (!text.includes("\n")) {
        const { value } = await reader.read();
        text += new TextDecoder().decode(value);
      }
      abort.abort();
      return JSON.parse(text.split("\n")[0]!);
    },
  };
}
