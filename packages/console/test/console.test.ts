/**
 * The console in real Chromium (Debian's, through playwright-core), served at /console by the Node server: the
 * editor's diagnostics come from the real parser at their line, the fixed schema draws its diagram, a written
 * tuple makes check answer ALLOWED, a conformance file from ../shared passes in the runner, the playground's state
 * survives in its URL. Screenshots go to packages/console/test-artifacts.
 */
import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { parseSchema, tryParseSchema, validateFile } from "@pemba/core";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { encodeState } from "../app/share.ts";
import { largeSchema } from "../scripts/large-schema.ts";
import {
  ask,
  CHROMIUM,
  launchChromium,
  openConsole,
  screenshot,
  typeSchema,
} from "../src/testing/browser.ts";
import { type Served, startNodeServer } from "../src/testing/servers.ts";

const CONFORMANCE = resolve(import.meta.dirname, "../../../../shared/conformance/permify/shapes");

const BROKEN = `entity user {}

entity doc {
  relation owner @user
  permission edit = owner or
}
`;

const FIXED = `entity user {}

entity folder {
  relation editor @user
}

entity doc {
  relation owner @user
  relation parent @folder
  permission edit = owner or parent.editor
}
`;

describe.skipIf(!existsSync(CHROMIUM))("console in Chromium (Node server)", () => {
  let server: Served;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    server = await startNodeServer();
    browser = await launchChromium();
    // an empty playground (without a state in its URL the page starts with an example model and data)
    const empty = await encodeState({ schema: "", tuples: [], attributes: [] });
    page = await openConsole(browser, `${server.url}/console#p=${empty}`);
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it("a schema typed with an error shows the parser's message at its line", async () => {
    // the parser's own answer (Permify's message places it after the next token: 7:2)
    const expected = tryParseSchema(BROKEN);
    expect(expected.ok ? "" : expected.error.message).toBe("7:2:no prefix parse function for RCB found");
    await typeSchema(page, BROKEN);
    // the empty playground's schema had its own error (no entity): wait for the linter to see the new text
    await page.waitForSelector('#diagnostics li[data-line="6"]');
    const item = page.locator("#diagnostics li");
    expect(await item.count()).toBe(1);
    // the list and the editor place it on the `}` of line 6 that the parser failed on
    expect(await item.getAttribute("data-line")).toBe("6");
    expect(await item.textContent()).toBe("6:1: no prefix parse function for RCB found");
    expect(await page.textContent(".cm-lintRange-error")).toBe("}");
    // CodeMirror marks it in the text and in the gutter of line 6
    await page.locator(".cm-lintRange-error").first().waitFor();
    const gutterLines = await page.$$eval(".cm-gutter-lint .cm-gutterElement", (els) =>
      els.filter((e) => e.querySelector(".cm-lint-marker-error")).map((e) => e.getBoundingClientRect().top),
    );
    const line6 = await page.$$eval(".cm-line", (els) => els[5]!.getBoundingClientRect().top);
    expect(gutterLines).toHaveLength(1);
    expect(Math.abs(gutterLines[0]! - line6)).toBeLessThan(4);
    await screenshot(page, "1-schema-error");
  });

  it("the fixed schema draws its diagram", async () => {
    await typeSchema(page, FIXED);
    await page.waitForFunction(() => document.querySelectorAll("#diagnostics li").length === 0);
    await page.waitForSelector('svg.diagram g.node[data-id="entity:folder"]');
    const nodes = await page.$$eval("svg.diagram g.node", (els) => els.map((e) => e.getAttribute("data-id")));
    expect(nodes.sort()).toEqual(["entity:doc", "entity:folder", "entity:user"]);
    // one line per pair of boxes, a label row (tspan) per relation or permission hop along it
    const edges = await page.$$eval("svg.diagram g.edge tspan", (els) =>
      els
        .map((t) => {
          const e = t.closest("g.edge")!;
          return `${e.getAttribute("data-from")}>${e.getAttribute("data-to")} ${t.textContent}`;
        })
        .sort(),
    );
    expect(await page.$$eval("svg.diagram g.edge", (els) => els.length)).toBe(3);
    expect(edges).toEqual([
      "entity:doc>entity:folder edit: parent.editor",
      "entity:doc>entity:folder parent",
      "entity:doc>entity:user owner",
      "entity:folder>entity:user editor",
    ]);
    // laid out: no two boxes overlap
    const boxes = await page.$$eval("svg.diagram g.node rect", (els) =>
      els.map((e) => {
        const r = e.getBoundingClientRect();
        return { x: r.x, y: r.y, w: r.width, h: r.height };
      }),
    );
    for (const [i, a] of boxes.entries()) {
      for (const b of boxes.slice(i + 1)) {
        const apart = a.x + a.w <= b.x || b.x + b.w <= a.x || a.y + a.h <= b.y || b.y + b.h <= a.y;
        expect(apart).toBe(true);
      }
    }
    await screenshot(page, "2-diagram");
  });

  it("a model of more than 40 entities and rules is listed, not laid out", async () => {
    const large = largeSchema(600);
    await page.evaluate((text) => {
      (
        globalThis as unknown as { pembaConsole: { setSchemaText(t: string): void } }
      ).pembaConsole.setSchemaText(text);
    }, large);
    await page.waitForSelector(".diagram-too-large");
    expect(await page.textContent(".diagram-too-large")).toMatch(
      /^62 entities and rules, 415 arrows: more than 40 boxes are not laid out in the page\. entity user, entity group, entity ea, /,
    );
    await typeSchema(page, FIXED);
    await page.waitForSelector("svg.diagram");
  });

  it("a written tuple makes check answer ALLOWED with its path", async () => {
    await page.click("#apply-schema");
    await page.waitForFunction(() =>
      document.querySelector("#schema-status")?.textContent?.includes("written"),
    );
    await ask(page, "check", "doc:1", "edit", "user:alice");
    expect(await page.textContent("#query-result")).toBe("CHECK_RESULT_DENIED (check_count 2)");
    await page.fill("#tuple-input", "doc:1#parent@folder:f1");
    await page.click("#tuple-form button");
    await page.fill("#tuple-input", "folder:f1#editor@user:alice");
    await page.click("#tuple-form button");
    await page.waitForFunction(() => document.querySelectorAll("#tuples tbody tr").length === 2);
    await ask(page, "check", "doc:1", "edit", "user:alice");
    expect(await page.textContent("#query-result")).toBe("CHECK_RESULT_ALLOWED (check_count 3)");
    // the proof, drawn as a tree: every node of the granting path highlighted, down to the written tuples
    await page.waitForSelector("#proof li");
    expect(await proofLines(page)).toEqual([
      "path ✓ permission doc:1#edit",
      "path ✓ union",
      "path ✓ tuple_to_userset doc:1 parent.editor",
      "path ✓ relation folder:f1#editor via doc:1#parent@folder:f1",
      "path ✓ direct folder:f1#editor via folder:f1#editor@user:alice — the tuple names the subject user:alice",
    ]);
    // a path: each highlighted node sits inside the one before it
    const nesting = await page.$$eval("#proof li.grant", (els) =>
      els.map((e) => {
        let n = 0;
        for (let p = e.parentElement?.closest("li.grant"); p; p = p.parentElement?.closest("li.grant")) n++;
        return n;
      }),
    );
    expect(nesting).toEqual([0, 1, 2, 3, 4]);
    await screenshot(page, "3-check-proof");
    // explain of a denial: every branch tried, none highlighted
    await ask(page, "explain", "doc:1", "edit", "user:bob");
    expect(await page.textContent("#query-result")).toBe("CHECK_RESULT_DENIED (check_count 3)");
    await page.waitForSelector("#proof li");
    expect(await proofLines(page)).toEqual([
      "     ✗ permission doc:1#edit",
      "     ✗ union",
      "     ✗ relation doc:1#owner — no tuple doc:1#owner@user:bob",
      "     ✗ tuple_to_userset doc:1 parent.editor",
      "     ✗ relation folder:f1#editor via doc:1#parent@folder:f1 — no tuple folder:f1#editor@user:bob",
    ]);
    await ask(page, "lookup-entity", "doc", "edit", "user:alice");
    expect(await page.textContent("#query-result")).toBe("1 doc: 1");
    await ask(page, "lookup-subject", "doc:1", "edit", "user");
    expect(await page.textContent("#query-result")).toBe("1 user: alice");
  });

  it("the playground's state is in its URL: a new tab with the link has the same schema and data", async () => {
    const link = page.url();
    expect(link).toMatch(/#p=[A-Za-z0-9_-]+$/);
    const again = await openConsole(browser, link);
    try {
      expect(
        await again.evaluate(() => (globalThis as unknown as Hooks).pembaConsole.editor.state.doc.toString()),
      ).toBe(FIXED);
      const rows = await again.$$eval("#tuples tbody tr td:first-child", (els) =>
        els.map((e) => e.textContent),
      );
      expect(rows.sort()).toEqual(["doc:1#parent@folder:f1", "folder:f1#editor@user:alice"]);
      await ask(again, "check", "doc:1", "edit", "user:alice");
      expect(await again.textContent("#query-result")).toMatch(/^CHECK_RESULT_ALLOWED/);
    } finally {
      await again.close();
    }
  });

  it("deletes a relationship and pages through many", async () => {
    await page
      .locator("#tuples tbody tr", { hasText: "folder:f1#editor@user:alice" })
      .locator("button")
      .click();
    await page.waitForFunction(() => document.querySelectorAll("#tuples tbody tr").length === 1);
    await ask(page, "check", "doc:1", "edit", "user:alice");
    expect(await page.textContent("#query-result")).toBe("CHECK_RESULT_DENIED (check_count 3)");
    // 25 more: a page holds 20
    for (let i = 0; i < 25; i++) {
      await page.fill("#tuple-input", `doc:d${String(i).padStart(2, "0")}#owner@user:u${i}`);
      await page.click("#tuple-form button");
      await page.waitForFunction(
        (n) => document.querySelector("#data-status")?.textContent?.includes(n),
        `u${i}`,
      );
    }
    const first = await page.$$eval("#tuples tbody tr", (els) => els.length);
    expect(first).toBe(20);
    await page.click("#tuples-next");
    await page.waitForFunction(() => document.querySelectorAll("#tuples tbody tr").length === 6);
    expect(await page.isDisabled("#tuples-next")).toBe(true);
  });

  it("adds and deletes an attribute, refusing one the schema does not declare", async () => {
    await page.fill("#attribute-input", "doc:1$public|boolean:true");
    await page.click("#attribute-form button");
    await page.waitForFunction(() => document.querySelector("#data-status")?.className === "error");
    expect(await page.textContent("#data-status")).toBe("ERROR_CODE_ATTRIBUTE_DEFINITION_NOT_FOUND");
    await typeSchema(
      page,
      FIXED.replace("  relation parent @folder\n", "  relation parent @folder\n  attribute public boolean\n"),
    );
    await page.click("#apply-schema");
    await page.fill("#attribute-input", "doc:1$public|boolean:true");
    await page.click("#attribute-form button");
    await page.waitForFunction(() => document.querySelectorAll("#attributes tbody tr").length === 1);
    expect(await page.textContent("#attributes tbody td")).toBe("doc:1$public|boolean:true");
    await page.locator("#attributes tbody tr button").click();
    await page.waitForFunction(() => document.querySelectorAll("#attributes tbody tr").length === 0);
    expect(await page.textContent("#data-status")).toBe("deleted doc:1$public|boolean:true");
  });

  it.skipIf(!existsSync(CONFORMANCE))("a conformance file from ../shared passes in the runner", async () => {
    const file = resolve(CONFORMANCE, "google-docs-simplified.yaml");
    const report = await validateFile(readFileSync(file, "utf8"));
    expect(report.ok).toBe(true);
    await page.setInputFiles("#validation-file", file);
    await page.waitForFunction(() =>
      (document.querySelector("#validation-text") as HTMLTextAreaElement).value.includes("scenarios:"),
    );
    await page.click("#validation-run");
    await page.waitForFunction(() => document.querySelector("#validation-summary")?.textContent !== "");
    expect(await page.textContent("#validation-summary")).toBe(`${report.passed} passed, 0 failed`);
    const results = await page.$$eval("#validation-results tbody tr", (els) =>
      els.map((e) => [...e.querySelectorAll("td")].map((td) => td.textContent)),
    );
    expect(results.map((r) => r[3])).toEqual(report.assertions.map((a) => a.query));
    expect(results.every((r) => r[0] === "pass")).toBe(true);
    // coverage: every relation and permission of the file's schema, ticked when an assertion's proof used it (a
    // union stops at its first grant, so `org.admin` is never reached by these three checks)
    const coverage = await page.$$eval("#coverage li", (els) => els.map((e) => e.textContent));
    expect(coverage).toEqual([
      "✗ relation organization#group",
      "✗ relation organization#document",
      "✗ relation organization#administrator",
      "✗ relation organization#direct_member",
      "✗ permission organization#admin",
      "✗ permission organization#member",
      "✓ relation group#manager",
      "✓ relation group#direct_member",
      "✗ permission group#member",
      "✗ relation document#org",
      "✓ relation document#viewer",
      "✓ relation document#manager",
      "✓ permission document#edit",
      "✓ permission document#view",
    ]);
    expect(await page.textContent("#coverage-summary")).toBe(
      "6 of 14 relations, attributes, permissions and rules exercised (43%)",
    );
    await page.locator("#validation-section").scrollIntoViewIfNeeded();
    await screenshot(page, "4-validation");
  });

  it("a failing assertion is shown failed with the engine's answer", async () => {
    const text = `schema: |-
  entity user {}
  entity doc {
    relation owner @user
    permission edit = owner
  }
relationships:
  - doc:1#owner@user:alice
scenarios:
  - name: "s"
    checks:
      - entity: "doc:1"
        subject: "user:alice"
        assertions:
          edit: true
      - entity: "doc:1"
        subject: "user:bob"
        assertions:
          edit: true
`;
    await page.fill("#validation-text", text);
    await page.click("#validation-run");
    await page.waitForFunction(() =>
      document.querySelector("#validation-summary")?.textContent?.startsWith("1 passed"),
    );
    expect(await page.textContent("#validation-summary")).toBe("1 passed, 1 failed");
    const rows = await page.$$eval("#validation-results tbody tr", (els) =>
      els.map((e) => [...e.querySelectorAll("td")].map((td) => td.textContent).join(" | ")),
    );
    expect(rows).toEqual([
      "pass | 15 | s | user:alice edit doc:1 | ",
      "FAIL | 19 | s | user:bob edit doc:1 | expected true, got false",
    ]);
  });
});

describe.skipIf(!existsSync(CHROMIUM))("the console's first screen (the README's screenshot)", () => {
  let server: Served;
  let browser: Browser;
  beforeAll(async () => {
    server = await startNodeServer();
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it("opens on an example model and data; a check through a rule shows the rule's inputs", async () => {
    const page = await openConsole(browser, `${server.url}/console`);
    expect(await page.$$eval("#diagnostics li", (els) => els.length)).toBe(0);
    await page.waitForSelector('svg.diagram g.node[data-id="rule:is_public"]');
    const rows = await page.$$eval("#tuples tbody tr td:first-child", (els) => els.map((e) => e.textContent));
    expect(rows).toHaveLength(5);
    expect(await page.textContent("#attributes tbody td")).toBe("document:3$public|boolean:true");
    await ask(page, "check", "document:3", "view", "user:zoe");
    expect(await page.textContent("#query-result")).toBe("CHECK_RESULT_ALLOWED (check_count 4)");
    await page.waitForSelector("#proof li.grant");
    const path = await page.$$eval("#proof li.grant > .label", (els) => els.map((e) => e.textContent));
    expect(path.at(-1)).toBe("✓ rule document:3#is_public(public=true) { public == true }");
    await ask(page, "check", "document:1", "edit", "user:bob");
    expect(await page.textContent("#query-result")).toMatch(/^CHECK_RESULT_ALLOWED/);
    await page.waitForSelector("#proof li.grant");
    await screenshot(page, "readme");
    await page.close();
  });

  it("loads without a failed request (no /favicon.ico); the fields' examples are of the example model", async () => {
    const page = await browser.newPage();
    const failed: string[] = [];
    page.on("response", (r) => {
      if (r.status() >= 400) failed.push(`${r.status()} ${new URL(r.url()).pathname}`);
    });
    await page.goto(`${server.url}/console`, { waitUntil: "networkidle" });
    await page.waitForSelector("body[data-ready=true]");
    expect(failed).toEqual([]);
    expect(await page.$$eval("link[rel=icon]", (els) => els.map((e) => e.getAttribute("href")))).toEqual([
      "data:,",
    ]);

    const schema = parseSchema(
      await page.evaluate(() => (globalThis as unknown as Hooks).pembaConsole.editor.state.doc.toString()),
    );
    const placeholder = (id: string) => page.getAttribute(`#${id}`, "placeholder") as Promise<string>;
    const [entity, permission, subject] = await Promise.all(
      ["query-entity", "query-permission", "query-subject"].map(placeholder),
    );
    expect([entity, permission, subject]).toEqual(["document:1", "edit", "user:alice"]);
    const [type] = entity!.split(":");
    expect(Object.keys(schema.entities[type!]!.permissions)).toContain(permission);
    expect(Object.keys(schema.entities)).toContain(subject!.split(":")[0]);
    // relationship and attribute inputs: a relation and an attribute of the model
    expect(await placeholder("tuple-input")).toBe("document:1#owner@user:alice");
    expect(Object.keys(schema.entities.document!.relations)).toContain("owner");
    expect(await placeholder("attribute-input")).toBe("document:1$public|boolean:true");
    expect(schema.entities.document!.attributes.public?.type).toBe("ATTRIBUTE_TYPE_BOOLEAN");
    // each query's hint names only types (and their relations) of the model
    for (const kind of ["check", "explain", "lookup-entity", "lookup-subject"]) {
      await page.selectOption("#query-kind", kind);
      const hint = (await page.textContent("#query-hint")) ?? "";
      const named = [...hint.matchAll(/\((\w+)[:#) ]/g), ...hint.matchAll(/or (\w+)[:#]/g)].map((m) => m[1]!);
      expect(named.length, hint).toBeGreaterThan(0);
      for (const type of named) expect(Object.keys(schema.entities), hint).toContain(type);
    }
    await page.close();
  });
});

interface Hooks {
  pembaConsole: { editor: { state: { doc: { toString(): string } } } };
}

/** The drawn proof, one line per node in document order: `path` marks the highlighted granting path. */
function proofLines(page: Page): Promise<string[]> {
  return page.$$eval("#proof li", (els) =>
    els.map(
      (e) => `${e.classList.contains("grant") ? "path" : "    "} ${e.querySelector(".label")!.textContent}`,
    ),
  );
}
