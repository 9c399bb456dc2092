/**
 * Live mode in Chromium against a tenant of the server that served the page, on the Node server and on the Worker
 * (wrangler dev: workerd), both with preshared keys: the page loads without a key, a wrong key is refused with the
 * server's error, the right one writes the schema and a tuple that the server then holds, check answers ALLOWED,
 * and the key stays in the page (not in its URL, storage or cookies).
 */
import { existsSync } from "node:fs";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { encodeState } from "../app/share.ts";
import {
  ask,
  CHROMIUM,
  launchChromium,
  openConsole,
  screenshot,
  typeSchema,
} from "../src/testing/browser.ts";
import { type Served, startNodeServer, startWorkerDev } from "../src/testing/servers.ts";

const KEY = "console-live-key";
const SCHEMA = "entity user {}\n\nentity doc {\n  relation owner @user\n  permission edit = owner\n}\n";

const RUNTIMES: [string, () => Promise<Served>][] = [
  ["Node server", () => startNodeServer(["--auth-keys", KEY])],
  ["Worker (wrangler dev)", () => startWorkerDev({ PEMBA_DATABASE: "memory:", PEMBA_AUTH_KEYS: KEY })],
];

describe.skipIf(!existsSync(CHROMIUM)).each(RUNTIMES)("console live mode on the %s", (name, start) => {
  let target: Served;
  let browser: Browser;

  beforeAll(async () => {
    target = await start();
    browser = await launchChromium();
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await target?.close();
  });

  it("uses the key typed into the page, and only there", async () => {
    const empty = await encodeState({ schema: "", tuples: [], attributes: [] });
    const page = await openConsole(browser, `${target.url}/console#p=${empty}`);
    await page.selectOption("#mode", "live");
    await page.fill("#tenant", "t1");
    await page.fill("#key", "wrong");
    await page.click("#connect");
    await page.waitForFunction(() => document.querySelector("#status")?.className === "error");
    expect(await page.textContent("#status")).toBe("HTTP 401 (code 16): ERROR_CODE_INVALID_KEY");

    await page.fill("#key", KEY);
    await page.click("#connect");
    await page.waitForFunction(() => document.querySelector("#status")?.textContent === "live: tenant t1");
    await typeSchema(page, SCHEMA);
    await page.waitForFunction(() => document.querySelectorAll("#diagnostics li").length === 0);
    await page.click("#apply-schema");
    await page.waitForFunction(
      () => document.querySelector("#schema-status")?.textContent === "schema written",
    );
    await page.fill("#tuple-input", "doc:1#owner@user:alice");
    await page.click("#tuple-form button");
    await page.waitForFunction(() => document.querySelectorAll("#tuples tbody tr").length === 1);
    await ask(page, "check", "doc:1", "edit", "user:alice");
    expect(await page.textContent("#query-result")).toBe("CHECK_RESULT_ALLOWED (check_count 2)");
    // the proof comes from the server's explain endpoint
    await page.waitForSelector("#proof li.grant");
    const path = await page.$$eval("#proof li.grant > .label", (els) => els.map((e) => e.textContent));
    expect(path.at(-1)).toBe(
      "✓ direct doc:1#owner via doc:1#owner@user:alice — the tuple names the subject user:alice",
    );
    await ask(page, "check", "doc:1", "edit", "user:bob");
    expect(await page.textContent("#query-result")).toBe("CHECK_RESULT_DENIED (check_count 2)");
    await screenshot(page, `live-${name.split(" ")[0]!.toLowerCase()}`);

    // the server holds what the page wrote
    const read = await fetch(`${target.url}/v1/tenants/t1/data/relationships/read`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}` },
      body: JSON.stringify({
        metadata: { snap_token: "" },
        filter: { entity: { type: "doc", ids: [] } },
        page_size: 10,
        continuous_token: "",
      }),
    });
    expect(((await read.json()) as { tuples: unknown[] }).tuples).toEqual([
      {
        entity: { type: "doc", id: "1" },
        relation: "owner",
        subject: { type: "user", id: "alice", relation: "" },
      },
    ]);

    // the key is nowhere but in the page's memory
    expect(page.url()).not.toContain(KEY);
    const stored = await page.evaluate(() => JSON.stringify([{ ...localStorage }, { ...sessionStorage }]));
    expect(stored).toBe("[{},{}]");
    expect(await page.context().cookies()).toEqual([]);
    await page.close();
  });
});
