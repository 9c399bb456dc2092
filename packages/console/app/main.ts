/** The console page: wires the editor, diagram, data, queries and validation runner to the chosen backend. */
import { defaultKeymap, history, historyKeymap } from "@codemirror/commands";
import { type Diagnostic, linter, lintGutter } from "@codemirror/lint";
import { EditorState } from "@codemirror/state";
import { EditorView, keymap, lineNumbers } from "@codemirror/view";
import {
  type Attribute,
  formatAttribute,
  formatTuple,
  parseAttributeString,
  parseEntityString,
  parseSubjectString,
  parseTupleString,
  type Tuple,
} from "@pemba/core";
import { allPages, type Backend, LiveBackend, PlaygroundBackend } from "./backend.ts";
import { diagnose } from "./diagnostics.ts";
import { drawDiagram } from "./diagram.ts";
import { renderProof } from "./proof.ts";
import { decodeState, encodeState, type PlaygroundState } from "./share.ts";
import { runValidation } from "./validation.ts";

const $ = <T extends HTMLElement = HTMLElement>(id: string): T => {
  const node = document.getElementById(id);
  if (node === null) throw new Error(`#${id} missing from the page`);
  return node as T;
};

const EXAMPLE: PlaygroundState = {
  schema: `entity user {}

entity organization {
  relation admin @user
  relation member @user
}

entity document {
  relation org @organization
  relation owner @user
  relation viewer @user @organization#member
  attribute public boolean

  permission edit = owner or org.admin
  permission view = edit or viewer or is_public(public)
}

rule is_public(public boolean) {
  public == true
}
`,
  tuples: [
    "document:1#owner@user:alice",
    "document:1#org@organization:acme",
    "organization:acme#admin@user:bob",
    "document:2#viewer@organization:acme#member",
    "organization:acme#member@user:carol",
  ],
  attributes: ["document:3$public|boolean:true"],
};

const PAGE_SIZE = 20;

const playground = new PlaygroundBackend();
let backend: Backend = playground;

function say(id: string, text: string, ok = true): void {
  const node = $(id);
  node.textContent = text;
  node.className = ok ? "ok" : "error";
}

const errorText = (e: unknown) => (e instanceof Error ? e.message : String(e));

/** Runs an action of the page; its error goes to the status element `statusId`. */
async function attempt(statusId: string, run: () => Promise<void>): Promise<void> {
  try {
    await run();
  } catch (e) {
    say(statusId, errorText(e), false);
  }
}

// ---- schema editor: diagnostics from the real parser, diagram when it parses ----

let diagramTimer: ReturnType<typeof setTimeout> | undefined;

function showDiagnostics(text: string): Diagnostic[] {
  const result = diagnose(text);
  const list = $("diagnostics");
  list.replaceChildren(
    ...result.diagnostics.map((d) => {
      const li = document.createElement("li");
      li.textContent = `${d.line}:${d.column}: ${d.text}`;
      li.dataset.line = String(d.line);
      return li;
    }),
  );
  // the layout runs after the editor has its diagnostics (a large model takes longer to lay out than to parse)
  if (result.ok) {
    const schema = result.schema;
    clearTimeout(diagramTimer);
    diagramTimer = setTimeout(() => drawDiagram(schema, $("diagram")), 0);
  }
  return result.diagnostics.map((d) => ({ from: d.from, to: d.to, severity: "error", message: d.message }));
}

const editor = new EditorView({
  parent: $("editor"),
  state: EditorState.create({
    doc: "",
    extensions: [
      lineNumbers(),
      history(),
      keymap.of([...defaultKeymap, ...historyKeymap]),
      lintGutter(),
      linter((view) => showDiagnostics(view.state.doc.toString()), { delay: 150 }),
    ],
  }),
});

const schemaText = () => editor.state.doc.toString();

function setSchemaText(text: string): void {
  editor.dispatch({ changes: { from: 0, to: editor.state.doc.length, insert: text } });
  showDiagnostics(text);
}

// ---- playground state in the URL ----

async function saveState(): Promise<void> {
  if (backend !== playground) return;
  const tuples = await allPages((t) => playground.readTuples("", 1000, t));
  const attributes = await allPages((t) => playground.readAttributes("", 1000, t));
  const state: PlaygroundState = {
    schema: schemaText(),
    tuples: tuples.map(formatTuple),
    attributes: attributes.map(formatAttribute),
  };
  window.history.replaceState(null, "", `#p=${await encodeState(state)}`);
}

async function loadPlayground(state: PlaygroundState): Promise<void> {
  setSchemaText(state.schema);
  if (!diagnose(state.schema).ok) return;
  await playground.writeSchema(state.schema);
  say("schema-status", "schema written to the playground");
  const tuples = state.tuples.map((t) => parseTupleString(t));
  const attributes = state.attributes.map((a) => parseAttributeString(a));
  if (tuples.length + attributes.length === 0) return;
  try {
    await playground.write(tuples, attributes);
  } catch {
    // data written under an earlier schema: keep what the schema still allows, say what was left out
    const skipped: string[] = [];
    for (const t of tuples) await playground.write([t], []).catch(() => skipped.push(formatTuple(t)));
    for (const a of attributes) await playground.write([], [a]).catch(() => skipped.push(formatAttribute(a)));
    say("data-status", `left out (the schema does not allow them): ${skipped.join(", ")}`, false);
  }
}

// ---- relationships and attributes: browse (paged), add, delete ----

interface Listing<T> {
  tokens: string[];
  next: string;
  read(token: string): Promise<{ items: T[]; next: string }>;
  format(item: T): string;
  remove(item: T): Promise<void>;
  table: string;
  nextButton: string;
}

function listing<T>(opts: Omit<Listing<T>, "tokens" | "next">): Listing<T> {
  return { ...opts, tokens: [""], next: "" };
}

const tupleListing = listing<Tuple>({
  read: (token) => backend.readTuples($<HTMLInputElement>("tuple-filter").value.trim(), PAGE_SIZE, token),
  format: formatTuple,
  remove: (t) => backend.deleteTuple(t),
  table: "tuples",
  nextButton: "tuples-next",
});

const attributeListing = listing<Attribute>({
  read: (token) =>
    backend.readAttributes($<HTMLInputElement>("attribute-filter").value.trim(), PAGE_SIZE, token),
  format: formatAttribute,
  remove: (a) => backend.deleteAttribute(a),
  table: "attributes",
  nextButton: "attributes-next",
});

async function showPage<T>(list: Listing<T>): Promise<void> {
  const page = await list.read(list.tokens.at(-1)!);
  list.next = page.next;
  $<HTMLButtonElement>(list.nextButton).disabled = page.next === "";
  const body = $(list.table).querySelector("tbody")!;
  body.replaceChildren(
    ...page.items.map((item) => {
      const tr = document.createElement("tr");
      const text = document.createElement("td");
      text.textContent = list.format(item);
      const cell = document.createElement("td");
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = "Delete";
      button.addEventListener("click", () =>
        attempt("data-status", async () => {
          await list.remove(item);
          say("data-status", `deleted ${list.format(item)}`);
          await showPage(list);
          await saveState();
        }),
      );
      cell.append(button);
      tr.append(text, cell);
      return tr;
    }),
  );
}

async function firstPages(): Promise<void> {
  tupleListing.tokens = [""];
  attributeListing.tokens = [""];
  await showPage(tupleListing);
  await showPage(attributeListing);
}

for (const list of [tupleListing, attributeListing] as Listing<unknown>[]) {
  const prefix = list.table;
  $(`${prefix}-first`).addEventListener("click", () =>
    attempt("data-status", async () => {
      list.tokens = [""];
      await showPage(list);
    }),
  );
  $(`${prefix}-next`).addEventListener("click", () =>
    attempt("data-status", async () => {
      if (list.next === "") return;
      list.tokens.push(list.next);
      await showPage(list);
    }),
  );
}
for (const [input, list] of [
  ["tuple-filter", tupleListing],
  ["attribute-filter", attributeListing],
] as const) {
  $(input).addEventListener("change", () =>
    attempt("data-status", async () => {
      list.tokens = [""];
      await showPage(list as Listing<unknown>);
    }),
  );
}

$("tuple-form").addEventListener("submit", (event) => {
  event.preventDefault();
  void attempt("data-status", async () => {
    const input = $<HTMLInputElement>("tuple-input");
    const tuple = parseTupleString(input.value.trim());
    await backend.write([tuple], []);
    say("data-status", `wrote ${formatTuple(tuple)}`);
    input.value = "";
    await showPage(tupleListing);
    await saveState();
  });
});

$("attribute-form").addEventListener("submit", (event) => {
  event.preventDefault();
  void attempt("data-status", async () => {
    const input = $<HTMLInputElement>("attribute-input");
    const attribute = parseAttributeString(input.value.trim());
    await backend.write([], [attribute]);
    say("data-status", `wrote ${formatAttribute(attribute)}`);
    input.value = "";
    await showPage(attributeListing);
    await saveState();
  });
});

$("apply-schema").addEventListener("click", () =>
  attempt("schema-status", async () => {
    await backend.writeSchema(schemaText());
    say("schema-status", backend === playground ? "schema written to the playground" : "schema written");
    await saveState();
  }),
);

// ---- check, explain, lookups ----

const HINTS: Record<string, string> = {
  check:
    "entity (document:1), permission, subject (user:alice or organization:acme#member); the proof is drawn below",
  explain: "entity (document:1), permission, subject: the decision and its proof",
  "lookup-entity":
    "entity type (document), permission, subject (user:alice): the ids of that type it may reach",
  "lookup-subject":
    "entity (document:1), permission, subject type (user or organization#member): the subject ids",
};

const queryKind = $<HTMLSelectElement>("query-kind");
const showHint = () => {
  $("query-hint").textContent = HINTS[queryKind.value] ?? "";
};
queryKind.addEventListener("change", showHint);
showHint();

async function explainInto(input: Parameters<Backend["explain"]>[0]): Promise<void> {
  const proof = $("proof");
  try {
    renderProof(await backend.explain(input), proof);
  } catch (e) {
    proof.textContent = `no proof: ${errorText(e)}`;
  }
}

$("query-form").addEventListener("submit", (event) => {
  event.preventDefault();
  void attempt("query-result", async () => {
    $("proof").replaceChildren();
    const kind = queryKind.value;
    const entityText = $<HTMLInputElement>("query-entity").value.trim();
    const permission = $<HTMLInputElement>("query-permission").value.trim();
    const subjectText = $<HTMLInputElement>("query-subject").value.trim();
    const depth = Number($<HTMLInputElement>("query-depth").value) || 50;
    if (kind === "lookup-entity") {
      const ids = await backend.lookupEntity(entityText, permission, parseSubjectString(subjectText), depth);
      say("query-result", `${ids.length} ${entityText}: ${ids.join(", ")}`);
      return;
    }
    const entity = parseEntityString(entityText);
    if (kind === "lookup-subject") {
      const [type = "", relation = ""] = subjectText.split("#", 2);
      const ids = await backend.lookupSubject(entity, permission, { type, relation }, depth);
      say("query-result", `${ids.length} ${subjectText}: ${ids.join(", ")}`);
      return;
    }
    const input = { entity, permission, subject: parseSubjectString(subjectText), depth };
    if (kind === "check") {
      const outcome = await backend.check(input);
      say("query-result", `${outcome.can} (check_count ${outcome.checkCount})`);
      await explainInto(input);
      return;
    }
    const answer = await backend.explain(input);
    say("query-result", `${answer.can} (check_count ${answer.metadata.check_count})`);
    renderProof(answer, $("proof"));
  });
});

// ---- validation-file runner ----

$("validation-file").addEventListener("change", () =>
  attempt("validation-summary", async () => {
    const file = $<HTMLInputElement>("validation-file").files?.[0];
    if (file) $<HTMLTextAreaElement>("validation-text").value = await file.text();
  }),
);

$("validation-run").addEventListener("click", () =>
  attempt("validation-summary", async () => {
    const result = await runValidation($<HTMLTextAreaElement>("validation-text").value);
    const body = $("validation-results").querySelector("tbody")!;
    const rows = result.assertions.map((a) => {
      const tr = document.createElement("tr");
      tr.className = a.pass ? "pass" : "fail";
      const detail =
        a.error ?? (a.pass ? "" : `expected ${JSON.stringify(a.expected)}, got ${JSON.stringify(a.actual)}`);
      for (const text of [a.pass ? "pass" : "FAIL", String(a.line), a.scenario, a.query, detail]) {
        const td = document.createElement("td");
        td.textContent = text;
        tr.append(td);
      }
      return tr;
    });
    for (const p of result.problems) {
      const tr = document.createElement("tr");
      tr.className = "fail";
      for (const text of ["FAIL", String(p.line), "", p.key, p.message]) {
        const td = document.createElement("td");
        td.textContent = text;
        tr.append(td);
      }
      rows.push(tr);
    }
    body.replaceChildren(...rows);
    if (result.aborted) {
      say("validation-summary", `stopped (${result.aborted.stage}): ${result.aborted.message}`, false);
    } else {
      const ok = result.failed === 0 && result.problems.length === 0;
      say(
        "validation-summary",
        `${result.passed} passed, ${result.failed} failed${result.problems.length ? `, ${result.problems.length} problems` : ""}`,
        ok,
      );
    }
    const covered = result.coverage.filter((c) => c.covered).length;
    $("coverage-summary").textContent = result.coverage.length
      ? `${covered} of ${result.coverage.length} relations, attributes, permissions and rules exercised (${Math.round((100 * covered) / result.coverage.length)}%)`
      : "";
    $("coverage").replaceChildren(
      ...result.coverage.map((c) => {
        const li = document.createElement("li");
        li.className = c.covered ? "covered" : "uncovered";
        li.textContent = `${c.covered ? "✓" : "✗"} ${c.key}`;
        return li;
      }),
    );
  }),
);

// ---- modes ----

const mode = $<HTMLSelectElement>("mode");
mode.addEventListener("change", () =>
  attempt("status", async () => {
    const live = mode.value === "live";
    $("live-settings").hidden = !live;
    $("share").hidden = live;
    if (!live) {
      backend = playground;
      say("status", "playground: everything runs in this page");
      await firstPages();
    } else {
      say("status", "live: enter the tenant and key, then Connect");
    }
  }),
);

$("connect").addEventListener("click", () =>
  attempt("status", async () => {
    const tenant = $<HTMLInputElement>("tenant").value.trim();
    const key = $<HTMLInputElement>("key").value;
    backend = new LiveBackend(new URL(".", location.href), tenant, key);
    await firstPages();
    say("status", `live: tenant ${tenant}`);
  }),
);

$("share").addEventListener("click", () =>
  attempt("status", async () => {
    await saveState();
    await navigator.clipboard.writeText(location.href);
    say("status", "link copied: it holds the schema and the data");
  }),
);

async function start(): Promise<void> {
  try {
    const state = (await decodeState(location.hash)) ?? EXAMPLE;
    await loadPlayground(state);
    await firstPages();
    say("status", "playground: everything runs in this page");
  } finally {
    document.body.dataset.ready = "true";
  }
}

/** For the benchmark and tests: the page's own diagnostics function and editor. */
Object.assign(globalThis, { pembaConsole: { diagnose, editor, setSchemaText } });

void attempt("status", start);
