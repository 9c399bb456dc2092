/**
 * data/export and data/import over HTTP, through the one route table and pipeline: the export streams a dump at one
 * snap; an import in several requests (each whole lines from an offset, with the previous answer's state) ends with
 * the same rows and a verified trailer; a lost answer's chunk sent again changes nothing; the shared auth applies.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DataImportResponse } from "../../wire/dump.ts";
import { startTestServer, TEST_SCHEMA, type TestServer } from "../testing/harness.ts";

const auth = { mode: "preshared" as const, keys: [{ key: "admin" }, { key: "k2", tenants: ["t2"] }] };
const admin = { authorization: "Bearer admin" };

let source: TestServer;
let target: TestServer;
beforeAll(async () => {
  source = await startTestServer({ auth });
  target = await startTestServer({ auth });
  const version = await source.service.writeSchema("t1", TEST_SCHEMA);
  const tuples = Array.from({ length: 300 }, (_, i) => ({
    entity: { type: "document", id: `d${i}` },
    relation: "viewer",
    subject:
      i % 3 === 0
        ? { type: "organization", id: `o${i % 7}`, relation: "member" }
        : { type: "user", id: `u${i}`, relation: "" },
  }));
  const attributes = Array.from({ length: 30 }, (_, i) => ({
    entity: { type: "document", id: `d${i}` },
    attribute: "score",
    value: { type: "ATTRIBUTE_TYPE_INTEGER" as const, data: i },
  }));
  await source.service.writeData("t1", version, tuples, attributes);
});
afterAll(async () => {
  await source.close();
  await target.close();
});

async function exportText(server: TestServer, body: unknown = {}): Promise<Response> {
  return fetch(`${server.url}/v1/tenants/t1/data/export`, {
    method: "POST",
    headers: { "content-type": "application/json", ...admin },
    body: JSON.stringify(body),
  });
}

function importChunk(lines: string[], offset: number, state: string, headers: Record<string, string> = {}) {
  return fetch(`${target.url}/v1/tenants/t1/data/import`, {
    method: "POST",
    headers: {
      "content-type": "application/x-ndjson",
      ...admin,
      "pemba-import-offset": String(offset),
      ...(offset > 0 ? { "pemba-import-state": state } : {}),
      ...headers,
    },
    body: `${lines.join("\n")}\n`,
  });
}

const withoutHeader = (text: string) => text.split("\n").slice(1).join("\n");

describe("data/export and data/import over HTTP", () => {
  it("exports a stream at one snap, and an import in chunks of lines rebuilds the same dump", async () => {
    const res = await exportText(source);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/x-ndjson");
    const text = await res.text();
    const lines = text.trimEnd().split("\n");
    expect(lines).toHaveLength(1 + 1 + 300 + 30 + 1);
    expect(JSON.parse(lines.at(-1)!)).toMatchObject({
      type: "trailer",
      tuples: 300,
      attributes: 30,
      lines: 332,
    });

    let offset = 0;
    let state = "";
    let last: DataImportResponse | undefined;
    const requests: number[] = [];
    while (offset < lines.length) {
      const chunk = lines.slice(offset, offset + 100);
      const r = await importChunk(chunk, offset, state);
      expect(r.status).toBe(200);
      last = (await r.json()) as DataImportResponse;
      // the answer before the last is sent again, as a client that lost it would: nothing changes
      if (offset === 200) {
        const again = (await (await importChunk(chunk, offset, state)).json()) as DataImportResponse;
        expect(again.counts.written).toBe(last.counts.written - 100);
        expect(again.lines).toBe(last.lines);
      }
      expect(last.lines).toBe(offset + chunk.length);
      requests.push(last.lines);
      offset = last.lines;
      state = last.state;
    }
    expect(requests).toEqual([100, 200, 300, 333]);
    expect(last).toMatchObject({
      lines: 333,
      done: true,
      counts: { tuples: 300, attributes: 30, written: 330, unchanged: 0, errors: 0 },
      errors: [],
    });
    expect(last!.snap_token).not.toBe("");
    const round = await (await exportText(target)).text();
    expect(withoutHeader(round)).toBe(withoutHeader(text));
  });

  it("a chunk whose lines are not where its offset says fails the checksum at the trailer", async () => {
    const text = await (await exportText(source)).text();
    const lines = text.trimEnd().split("\n");
    const first = (await (await importChunk(lines.slice(0, 200), 0, "")).json()) as DataImportResponse;
    // lines 201.. skipped: the counts and the checksum disagree at the trailer
    const r = await importChunk(lines.slice(300), first.lines, first.state);
    expect(r.status).toBe(400);
    expect(((await r.json()) as { message: string }).message).toMatch(
      /^line 233: the trailer counts 332 lines before it/,
    );
  });

  it("refuses a body that ends inside a line, a wrong state, a bad on-conflict, and a key of another tenant", async () => {
    const text = await (await exportText(source)).text();
    const lines = text.trimEnd().split("\n");
    const cut = await fetch(`${target.url}/v1/tenants/t1/data/import`, {
      method: "POST",
      headers: { ...admin },
      body: `${lines[0]}\n${lines[1]!.slice(0, 10)}`,
    });
    expect(cut.status).toBe(400);
    expect(((await cut.json()) as { message: string }).message).toBe(
      "line 2: the body must end with a whole line",
    );
    const state = await importChunk(lines.slice(5, 10), 5, "nonsense");
    expect(state.status).toBe(400);
    const conflict = await importChunk(lines.slice(0, 2), 0, "", { "pemba-on-conflict": "replace" });
    expect(((await conflict.json()) as { message: string }).message).toBe(
      "pemba-on-conflict must be one of touch, skip, fail",
    );
    const other = await fetch(`${target.url}/v1/tenants/t1/data/export`, {
      method: "POST",
      headers: { authorization: "Bearer k2" },
      body: "{}",
    });
    expect(other.status).toBe(403);
    const none = await fetch(`${target.url}/v1/tenants/t1/data/export`, { method: "POST", body: "{}" });
    // a streaming route's error, as the pipeline answers every stream (watch the same)
    const watch = await fetch(`${target.url}/v1/tenants/t1/watch`, { method: "POST", body: "{}" });
    expect([none.status, await none.text()]).toEqual([watch.status, await watch.text()]);
    // and the import's as data/write's: the same pipeline
    const noKey = (path: string) =>
      fetch(`${target.url}/v1/tenants/t1/${path}`, { method: "POST", body: "{}" });
    const [imp, write] = [await noKey("data/import"), await noKey("data/write")];
    expect([imp.status, await imp.json()]).toEqual([write.status, await write.json()]);
  });

  it("an export at an older snap token leaves out later writes", async () => {
    const first = await (await exportText(source)).text();
    const token = JSON.parse(first.split("\n")[0]!).snap_token as string;
    const head = await source.service.readSchema("t1", "");
    await source.service.writeData(
      "t1",
      head.version,
      [
        {
          entity: { type: "document", id: "new" },
          relation: "owner",
          subject: { type: "user", id: "x", relation: "" },
        },
      ],
      [],
    );
    const atToken = await (await exportText(source, { snap_token: token })).text();
    expect(withoutHeader(atToken)).toBe(withoutHeader(first));
    const now = await (await exportText(source)).text();
    expect(now).toContain('"entity_id":"new"');
  });
});
