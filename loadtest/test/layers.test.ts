/**
 * The load tests' layers, from the bottom up. A file imports only its own layer and the layers of lower levels;
 * no import circle; a file in no layer fails. Type-only imports count; tests are exempt. The packages are reached
 * through their entries, testing entries included (never a package's test/ folder).
 */
import { join } from "node:path";
import { describeLayers, type Levels } from "@pemba/core/testing/layers";

const LEVELS: Levels = [
  [
    {
      name: "packages",
      holds: [
        "@pemba/core",
        "@pemba/core/node",
        "@pemba/core/testing",
        "@pemba/core/testing/node",
        "@pemba/node-server",
        "@pemba/node-server/testing",
        "@pemba/worker/testing",
      ],
      what: "the packages under test, and their testing entries",
    },
  ],
  [
    { name: "lib", holds: ["lib/"], what: "seeding, servers, targets, k6, reports, charts, profiles" },
    { name: "k6", holds: ["k6/"], what: "scripts k6 runs" },
    {
      name: "bare",
      holds: ["bare-server.ts", "grpc-bare-server.ts", "worker-bare/"],
      what: "bare servers, the floor the benchmarks compare against",
    },
  ],
  [
    {
      name: "scenarios",
      holds: ["scenarios/"],
      what: "pnpm loadtest's scenarios: permify, zanzigo, zitadel, flagd",
    },
  ],
  [{ name: "benchmarks", holds: ["*.ts"], what: "pnpm loadtest (run.ts) and one file per benchmark" }],
  [{ name: "tests", holds: ["test/"], what: "the tests' own helpers" }],
];

describeLayers("loadtest layers", {
  root: join(import.meta.dirname, ".."),
  levels: LEVELS,
  sources: { extensions: [".ts", ".js"], skip: ["reports", "results-history", ".bin"] },
  minFiles: 60,
  diagram: "loadtest",
});
