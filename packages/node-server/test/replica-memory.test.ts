/**
 * `--replica-memory` bounds what the working set adds to the server's RSS: its entries hold at most the budget
 * divided by the memory a full, evicting working set was measured to take per estimated byte (heap.ts).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { replicaSettings } from "@pemba/core";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MEMORY_PER_ESTIMATED_BYTE } from "../src/heap.ts";
import { type RunningServer, startServer } from "../src/index.ts";

const MB = 1048576;

describe("the working set's share of --replica-memory", () => {
  it("is the budget divided by the memory per estimated byte, rounded down", () => {
    expect(MEMORY_PER_ESTIMATED_BYTE).toBe(2);
    const flat = { replica: true, replicaMemoryMb: 256, replicaRefreshMs: 1000 };
    expect(replicaSettings(flat, MEMORY_PER_ESTIMATED_BYTE)).toEqual({
      maxBytes: 128 * MB,
      freshnessMs: 1000,
    });
    expect(replicaSettings({ ...flat, replicaMemoryMb: 1 }, 3)).toEqual({
      maxBytes: 349525,
      freshnessMs: 1000,
    });
    // the Worker's budget counts the entries' estimate itself
    expect(replicaSettings({ ...flat, replicaMemoryMb: 64 })).toEqual({
      maxBytes: 64 * MB,
      freshnessMs: 1000,
    });
    expect(replicaSettings({ ...flat, replica: false }, MEMORY_PER_ESTIMATED_BYTE)).toBeUndefined();
  });

  describe("a server", () => {
    let dir: string;
    let server: RunningServer;
    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), "pemba-replica-memory-"));
      server = await startServer({
        database: join(dir, "pemba.db"),
        host: "127.0.0.1",
        port: 0,
        replicaMemoryMb: 32,
        logger: pino({ level: "silent" }),
      });
    });
    afterAll(async () => {
      await server?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it("with --replica-memory 32 caps its entries at 16 MB of estimate, and says so in /metrics", async () => {
      const text = await (await fetch(`${server.url}/metrics`)).text();
      expect(/^pemba_working_set_max_bytes (\S+)$/m.exec(text)?.[1]).toBe(String(16 * MB));
    });
  });
});
