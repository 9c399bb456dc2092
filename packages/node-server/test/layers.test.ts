/**
 * @pemba/node-server's layers, from the bottom up. A file imports only its own layer and the layers of lower levels;
 * no import circle; a file in no layer fails. Type-only imports count; tests are exempt. Workspace packages are
 * layers too: the server's code imports @pemba/core's runtime entries, never a testing entry.
 */
import { join } from "node:path";
import { describeLayers, type Levels } from "@pemba/core/testing/layers";

const LEVELS: Levels = [
  [
    { name: "core", holds: ["@pemba/core", "@pemba/core/node"], what: "@pemba/core's entries" },
    { name: "console", holds: ["@pemba/console"], what: "the console's page, served at /console" },
  ],
  [
    {
      name: "parts",
      holds: ["src/*.ts"],
      what: "the server's parts: config, logs, metrics, tracing, gRPC, overload, heap, help, schema types",
    },
  ],
  [
    {
      name: "server",
      holds: ["src/index.ts"],
      what: "startServer on node:http (and gRPC); the package entry",
    },
  ],
  [{ name: "commands", holds: ["src/commands/"], what: "one file per pemba command" }],
  [{ name: "cli", holds: ["src/run-command.ts", "src/cli.ts"], what: "the pemba command line" }],
  [
    {
      name: "testing",
      holds: ["src/testing/", "@pemba/core/testing", "@pemba/core/testing/node", "@pemba/worker/testing"],
      what: "test support: the CLI as a child process (./testing), and the other packages' testing entries",
    },
  ],
  [{ name: "scripts", holds: ["scripts/"], what: "the bundle build (pnpm pemba)" }],
  [{ name: "tests", holds: ["test/"], what: "the tests' own helpers" }],
];

describeLayers("@pemba/node-server layers", {
  root: join(import.meta.dirname, ".."),
  levels: LEVELS,
  sources: { extensions: [".ts", ".mjs"], skip: ["dist", "test/fixtures"] },
  minFiles: 35,
  diagram: "node-server",
});
