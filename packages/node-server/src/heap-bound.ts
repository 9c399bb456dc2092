/**
 * `pemba import` and `pemba export` stream a dump through a bounded number of rows at a time, yet V8 sizes its heap
 * by how fast the program allocates, not by what it keeps: left alone it lets a long import's garbage grow the
 * process past 300 MB. These two commands therefore run with V8's heap bounded: the old generation to a size that
 * holds the rows of a chunk many times over, the young generation's semi-spaces to 4 MB (each scavenge then touches
 * less memory). The bound costs the garbage collector some CPU (about 8 % of an import's); it is not applied when the
 * user gave Node a heap size of their own (on the command line or in NODE_OPTIONS), nor to an import `--from`
 * another system, which reads its whole source into memory before writing.
 */

/** Old-generation MB for an import or export of `chunkRows` rows a chunk (2 KB a pending row, 160 MB at least). */
export const heapMegabytes = (chunkRows: number): number =>
  Math.max(160, 120 + Math.ceil((chunkRows * 2) / 1024));

const DEFAULT_CHUNK_ROWS = 20_000;

/** The value of `--name V` or `--name=V` in a command's arguments. */
function option(args: string[], name: string): string | undefined {
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === "--") return undefined;
    if (a === name) return args[i + 1];
    if (a.startsWith(`${name}=`)) return a.slice(name.length + 1);
  }
  return undefined;
}

/**
 * The Node flags a `pemba` command should run under, or undefined when it runs as it is: `args` are the command's
 * arguments (the command first), `execArgv` and `nodeOptions` the flags Node already has.
 */
export function boundedHeapFlags(
  args: string[],
  execArgv: string[],
  nodeOptions: string | undefined,
): string[] | undefined {
  const [command, ...rest] = args;
  if (command !== "import" && command !== "export") return undefined;
  const given = [...execArgv, ...(nodeOptions ?? "").split(/\s+/)];
  if (given.some((f) => /^--max-old-space-size(=|$)/.test(f) || /^--max-semi-space-size(=|$)/.test(f)))
    return undefined;
  const from = option(rest, "--from");
  if (command === "import" && from !== undefined && from !== "pemba") return undefined;
  const chunkRows = Number(option(rest, "--chunk-rows") ?? DEFAULT_CHUNK_ROWS);
  const rows = Number.isInteger(chunkRows) && chunkRows > 0 ? chunkRows : DEFAULT_CHUNK_ROWS;
  return [`--max-old-space-size=${heapMegabytes(rows)}`, "--max-semi-space-size=4"];
}
