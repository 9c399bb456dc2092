/** The `pemba` commands: serve, validate, migrate, codegen, schema diff, explain, load, export, import, decisions (loaded by cli.ts once the Node version is known to fit). */
import { ConfigError } from "./config.ts";
import { keepTickObjectShape } from "./heap.ts";
import { HELP_TEXT, pembaVersion } from "./help.ts";

async function main(argv: string[]): Promise<number> {
  keepTickObjectShape(); // before loading a command's modules, which may run a full collection
  const [command, ...rest] = argv;
  // `pemba serve --help` (any command): the help text, before a command parses its flags or opens a database.
  if (rest.includes("--help") || rest.includes("-h")) {
    process.stdout.write(HELP_TEXT);
    return 0;
  }
  switch (command) {
    case undefined:
    case "help":
    case "--help":
    case "-h":
      process.stdout.write(HELP_TEXT);
      return 0;
    case "--version":
    case "-v":
    case "version":
      process.stdout.write(`pemba ${pembaVersion()}\n`);
      return 0;
    // Commands load lazily: `--help` should not open database drivers.
    case "serve":
      return (await import("./commands/serve.ts")).runServe(rest);
    case "validate":
      return (await import("./commands/validate.ts")).runValidate(rest);
    case "migrate":
      return (await import("./commands/migrate.ts")).runMigrate(rest);
    case "codegen":
      return (await import("./commands/codegen.ts")).runCodegen(rest);
    case "schema":
      return (await import("./commands/schema.ts")).runSchema(rest);
    case "export":
      return (await import("./commands/export.ts")).runExport(rest);
    case "import":
      return (await import("./commands/import.ts")).runImport(rest);
    case "explain":
      return (await import("./commands/explain.ts")).runExplain(rest);
    case "decisions":
      return (await import("./commands/decisions.ts")).runDecisions(rest);
    case "load":
      return (await import("./commands/load.ts")).runLoad(rest);
    default:
      process.stderr.write(`pemba: unknown command "${command}"; run \`pemba --help\`\n`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    // serve keeps the process alive and exits from its signal handler.
    if (code >= 0) process.exitCode = code;
  },
  (error: unknown) => {
    if (error instanceof ConfigError || isUsageError(error)) {
      process.stderr.write(`pemba: ${error.message}\n`);
      process.exitCode = 2;
      return;
    }
    if (error instanceof Error && ("code" in error || error.name === "PembaError")) {
      // System errors (ENOENT, EADDRINUSE, ...) and PembaErrors say enough without a stack.
      const code = "code" in error && error.code !== error.message ? ` [${String(error.code)}]` : "";
      process.stderr.write(`pemba: ${error.message}${code}\n`);
      process.exitCode = 1;
      return;
    }
    process.stderr.write(
      `pemba: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n${causes(error)}`,
    );
    process.exitCode = 1;
  },
);

/** The `cause` chain, one line each: a wrapped error (drizzle's `Failed query: ...`) shows what actually failed. */
function causes(error: unknown): string {
  let text = "";
  for (let e = (error as { cause?: unknown }).cause, n = 0; e !== undefined && n < 5; n++) {
    const code = (e as { code?: unknown }).code;
    const message = e instanceof Error ? e.message : String(e);
    text += `  caused by: ${message}${code !== undefined && code !== message ? ` [${String(code)}]` : ""}\n`;
    e = (e as { cause?: unknown }).cause;
  }
  return text;
}

/** parseArgs' errors: unknown option, missing value, unexpected positional. */
function isUsageError(error: unknown): error is Error {
  return error instanceof TypeError && "code" in error && String(error.code).startsWith("ERR_PARSE_ARGS");
}
