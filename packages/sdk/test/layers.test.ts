/**
 * @pemba/sdk's layers, from the bottom up. A file imports only its own layer and the layers of lower levels;
 * no import circle; a file in no layer fails. Type-only imports count; tests are exempt. The published code
 * (src/) imports no workspace package: they sit above it, for scripts and tests.
 */
import { join } from "node:path";
import { describeLayers, type Levels } from "@pemba/core/testing/layers";

const LEVELS: Levels = [
  [
    {
      name: "wire",
      holds: ["src/wire.gen.ts"],
      what: "Permify's JSON types, generated (scripts/wire-types.ts)",
    },
    { name: "errors", holds: ["src/errors.ts"], what: "PembaError and its codes" },
  ],
  [
    {
      name: "transport",
      holds: ["src/transport.ts", "src/requests.ts", "src/ndjson.ts", "src/check-batcher.ts"],
      what: "HTTP with retries, request shapes, NDJSON streams, the check batcher",
    },
  ],
  [{ name: "clients", holds: ["src/client.ts", "src/authzen.ts"], what: "the Permify API client, AuthZEN" }],
  [{ name: "typed", holds: ["src/typed.ts"], what: "TypedClient over a generated schema type" }],
  [{ name: "entry", holds: ["src/index.ts"], what: "the published entry" }],
  [
    {
      name: "workspace",
      holds: [
        "@pemba/core",
        "@pemba/core/testing",
        "@pemba/core/testing/node",
        "@pemba/node-server",
        "@pemba/node-server/testing",
        "@pemba/worker/testing",
      ],
      what: "the other packages, for scripts and tests only",
    },
  ],
  [{ name: "scripts", holds: ["scripts/"], what: "build, bundle size, wire types, bench" }],
  [{ name: "tests", holds: ["test/"], what: "the tests' own helpers" }],
];

describeLayers("@pemba/sdk layers", {
  root: join(import.meta.dirname, ".."),
  levels: LEVELS,
  sources: { skip: ["dist", "test/fixtures"] },
  minFiles: 15,
  diagram: "sdk",
});
