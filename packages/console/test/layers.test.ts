/**
 * @pemba/console's layers, from the bottom up. A file imports only its own layer and the layers of lower levels;
 * no import circle; a file in no layer fails. Type-only imports count; tests are exempt. Workspace packages are
 * layers too: the page imports @pemba/core's runtime-neutral entry only.
 */
import { join } from "node:path";
import { describeLayers, type Levels } from "@pemba/core/testing/layers";

const LEVELS: Levels = [
  [
    {
      name: "core",
      holds: ["@pemba/core"],
      what: "@pemba/core's runtime-neutral entry (the engine runs in the page)",
    },
  ],
  [
    {
      name: "app",
      holds: ["app/*.ts"],
      what: "the page's parts: the in-page backend, diagnostics, the diagram, proofs, validation, sharing",
    },
  ],
  [{ name: "page", holds: ["app/main.ts"], what: "the page: editor, forms, wiring" }],
  [{ name: "assets", holds: ["generated/"], what: "the built page (scripts/build.ts)" }],
  [{ name: "entry", holds: ["src/index.ts"], what: "the assets, served by both runtimes" }],
  [
    {
      name: "testing",
      holds: ["src/testing/", "@pemba/core/testing", "@pemba/core/testing/node"],
      what: "test support: Chromium, the servers the page is opened on",
    },
  ],
  [{ name: "scripts", holds: ["scripts/"], what: "build and bench" }],
  [{ name: "tests", holds: ["test/"], what: "the tests' own helpers" }],
];

describeLayers("@pemba/console layers", {
  root: join(import.meta.dirname, ".."),
  levels: LEVELS,
  sources: { skip: ["generated", "test-artifacts"] },
  minFiles: 15,
  diagram: "console",
});
