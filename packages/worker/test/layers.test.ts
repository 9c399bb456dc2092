/**
 * @pemba/worker's layers, from the bottom up. A file imports only its own layer and the layers of lower levels;
 * no import circle; a file in no layer fails. Type-only imports count; tests are exempt. Workspace packages are
 * layers too: the Worker imports @pemba/core's runtime-neutral entry only.
 */
import { join } from "node:path";
import { describeLayers, type Levels } from "@pemba/core/testing/layers";

const LEVELS: Levels = [
  [
    { name: "core", holds: ["@pemba/core"], what: "@pemba/core's runtime-neutral entry" },
    { name: "console", holds: ["@pemba/console"], what: "the console's page, served at /console" },
    { name: "manifest", holds: ["package.json"], what: "the package's version" },
  ],
  [
    {
      name: "parts",
      holds: ["src/*.ts"],
      what: "settings from env, D1 (and its simulated latency), the request log, tracing",
    },
  ],
  [{ name: "handler", holds: ["src/handler.ts"], what: "the fetch handler: one createPemba per isolate" }],
  [{ name: "entry", holds: ["src/index.ts"], what: "the Worker's module (wrangler.toml's main)" }],
  [
    {
      name: "testing",
      holds: ["src/testing/", "@pemba/core/testing", "@pemba/core/testing/node"],
      what: "test support: wrangler dev on the shipped entry (./testing), and core's testing entries",
    },
  ],
  [{ name: "scripts", holds: ["scripts/"], what: "pnpm dev, placement" }],
  [{ name: "tests", holds: ["test/", "vitest.workerd.config.ts"], what: "the tests' own helpers" }],
];

describeLayers("@pemba/worker layers", {
  root: join(import.meta.dirname, ".."),
  levels: LEVELS,
  sources: { extensions: [".ts", ".mjs"] },
  minFiles: 12,
  diagram: "worker",
});
