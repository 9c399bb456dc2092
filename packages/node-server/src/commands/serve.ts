/** `pemba serve`: parse flags, start the server, stop gracefully on SIGINT/SIGTERM. */
import { parseArgs } from "node:util";
import { settingsOf } from "@pemba/core";
import { resolveServeConfig } from "../config.ts";
import { startServer } from "../index.ts";

/** A flag per setting: a value, or none for a switch (`--insecure-bind-any`). */
const serveFlags = Object.fromEntries(
  settingsOf("node").map(([, def]) => [def.flag, { type: def.arg === undefined ? "boolean" : "string" }]),
) as Record<string, { type: "string" | "boolean" }>;

/** Resolves -1: the process stays up and exits from the signal handler. */
export async function runServe(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: serveFlags, strict: true });
  const config = resolveServeConfig(values);
  const server = await startServer(config);
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) {
      process.stderr.write(`pemba: second ${signal}, exiting now\n`);
      process.exit(1);
    }
    stopping = true;
    server.close().then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`pemba: shutdown failed: ${String(error)}\n`);
        process.exit(1);
      },
    );
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  return -1;
}
