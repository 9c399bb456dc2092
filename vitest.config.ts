import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "core",
          root: "packages/core",
          include: ["src/**/*.test.ts", "test/**/*.test.ts"],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: "node-server",
          root: "packages/node-server",
          globalSetup: ["test/global-setup.ts"],
          include: ["src/**/*.test.ts", "test/**/*.test.ts"],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: "sdk",
          root: "packages/sdk",
          globalSetup: ["test/global-setup.ts"],
          include: ["src/**/*.test.ts", "test/**/*.test.ts"],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: "cli",
          root: "packages/cli",
          globalSetup: ["test/global-setup.ts"],
          include: ["test/**/*.test.ts"],
          // npm install of the packed CLI; podman builds of the container image (and its base image on first use)
          testTimeout: 600_000,
          hookTimeout: 900_000,
        },
      },
      {
        test: {
          name: "console",
          root: "packages/console",
          // the pemba bundle the tests serve the page with (src/testing/servers.ts)
          globalSetup: ["test/global-setup.ts"],
          include: ["test/**/*.test.ts"],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: "loadtest",
          root: "loadtest",
          include: ["test/**/*.test.ts", "lib/**/*.test.ts"],
          testTimeout: 180_000,
          // building k6 with Go when it is missing
          hookTimeout: 900_000,
        },
      },
      {
        test: {
          name: "worker",
          root: "packages/worker",
          include: ["src/**/*.test.ts", "test/**/*.test.ts"],
          // test/workerd runs inside workerd: the worker-d1 project below
          exclude: ["test/workerd/**"],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      "packages/worker/vitest.workerd.config.ts",
    ],
  },
});
