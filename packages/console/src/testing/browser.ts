/** Debian's Chromium through playwright-core, and where the console tests keep their screenshots. */
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { CHROMIUM_LAUNCH } from "@pemba/core/testing";
import { type Browser, chromium, type Page } from "playwright-core";

export const CHROMIUM = CHROMIUM_LAUNCH.executablePath;

/** Screenshots of the console tests (git-ignored): the test artifacts. */
export const ARTIFACTS = resolve(import.meta.dirname, "../../test-artifacts");

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ ...CHROMIUM_LAUNCH, args: [...CHROMIUM_LAUNCH.args] });
}

export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const path = join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

/** Opens the console at `url` and waits until its playground is loaded. */
export async function openConsole(browser: Browser, url: string): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(url);
  await page.waitForSelector("body[data-ready=true]", { timeout: 20_000 }).catch((e: unknown) => {
    throw new Error(`console did not start: ${errors.join("; ") || String(e)}`);
  });
  return page;
}

/** Replaces the editor's text by input into it (as a paste or an IME does: no auto-indent). */
export async function typeSchema(page: Page, text: string): Promise<void> {
  await page.click("#editor .cm-content");
  await page.keyboard.press("Control+A");
  await page.keyboard.press("Delete");
  await page.keyboard.insertText(text);
}

/** Runs a query of the Ask form and waits for its answer. */
export async function ask(page: Page, kind: string, entity: string, permission: string, subject: string) {
  await page.evaluate(() => {
    document.querySelector("#query-result")!.textContent = "";
  });
  await page.selectOption("#query-kind", kind);
  await page.fill("#query-entity", entity);
  await page.fill("#query-permission", permission);
  await page.fill("#query-subject", subject);
  await page.click("#query-form button[type=submit]");
  await page.waitForFunction(() => document.querySelector("#query-result")?.textContent !== "");
}
