/** TEST SUPPORT: type-checks TypeScript files (on disk, or given as text at a path) and answers their errors. */
import { resolve } from "node:path";
import ts from "typescript";

export interface CompileError {
  file: string;
  /** 1-based */
  line: number;
  message: string;
}

/** Type-checks `roots`; `overrides` maps an absolute path to the text to use instead of the file (or a new file). */
export function compileFiles(
  roots: string[],
  overrides: Record<string, string> = {},
  extra: ts.CompilerOptions = {},
): CompileError[] {
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2023,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    allowImportingTsExtensions: true,
    verbatimModuleSyntax: true,
    lib: ["lib.es2023.d.ts", "lib.dom.d.ts"],
    types: [],
    skipLibCheck: true,
    ...extra,
  };
  const host = ts.createCompilerHost(options);
  const override = (file: string) => overrides[resolve(file)];
  const { fileExists, readFile, getSourceFile } = host;
  host.fileExists = (file) => override(file) !== undefined || fileExists.call(host, file);
  host.readFile = (file) => override(file) ?? readFile.call(host, file);
  host.getSourceFile = (file, version, onError, create) => {
    const text = override(file);
    if (text === undefined) return getSourceFile.call(host, file, version, onError, create);
    return ts.createSourceFile(file, text, version);
  };
  const program = ts.createProgram(roots, options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => ({
    file: d.file?.fileName ?? "",
    line: d.file ? d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1 : 0,
    message: ts.flattenDiagnosticMessageText(d.messageText, "\n"),
  }));
}
