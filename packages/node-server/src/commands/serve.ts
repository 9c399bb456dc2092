/** `pemba serve`: parse flags, start the server, stop gracefully on SIGINT/SIGTERM. */
import { parseArgs } from "node:util";
import { type RawServeOptions, resolveServeConfig, SERVE_OPTIONS } from "../config.ts";
import { startServer } from "../index.ts";

const serveFlags = Object.fromEntries(
  Object.keys(SERVE_OPTIONS).map((name) => [name, { type: "string" as const }]),
) as Record<keyof typeof SERVE_OPTIONS, { type: "string" }>;

/** Resolves -1: the process stays up and exits from the signal handler. */
export async function runServe(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { ...serveFlags, "insecure-bind-any": { type: "boolean" } },
    strict: true,
  });
  const config = resolveServeConfig(values as RawServeOptions);
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
