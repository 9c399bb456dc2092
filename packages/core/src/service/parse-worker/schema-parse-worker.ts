/**
 * A SchemaParser on a worker thread (Node only, `@pemba/core/node`): a schema write's lexer, parser and checks run
 * there, so neither their CPU (8-16 ms for 64 KiB of DSL) nor their garbage (the tokens and trees: what drove the
 * main heap's collections during a stream of schema writes) is the event loop's. The event loop receives the checked
 * SchemaDefinition (a structured clone) and compiles it in turns, as before. One thread, started by the first parse,
 * parses one text at a time in arrival order (a flood of writes queues here instead of overlapping); it keeps the
 * process alive only while a parse is pending. A thread that dies fails the parses it held and is started again by
 * the next one.
 */
import { Worker } from "node:worker_threads";
import type { SchemaDefinition } from "../../schema/ast.ts";
import type { EntityPartials } from "../../schema/partial.ts";
import type { ParseRequest } from "./parse-thread.ts";
import { PARSE_THREAD_URL } from "./parse-thread-location.ts";
import {
  type ParsedSchema,
  type ParseErrorData,
  parseErrorFrom,
  type SchemaParser,
} from "./schema-parser.ts";

interface Pending {
  resolve(parsed: ParsedSchema): void;
  reject(error: unknown): void;
}

type ParseAnswer = ({ id: number } & ParsedSchema) | { id: number; error: ParseErrorData };

export class SchemaParseWorker implements SchemaParser {
  #worker: Worker | undefined;
  #nextId = 0;
  readonly #pending = new Map<number, Pending>();

  async parse(text: string): Promise<SchemaDefinition> {
    return (await this.#send({ id: this.#nextId++, text })).definition;
  }

  partialWrite(printedBase: string, partials: Record<string, EntityPartials>): Promise<ParsedSchema> {
    return this.#send({ id: this.#nextId++, text: printedBase, partials });
  }

  #send(request: ParseRequest): Promise<ParsedSchema> {
    const worker = this.#worker ?? this.#start();
    return new Promise((resolve, reject) => {
      if (this.#pending.size === 0) worker.ref();
      this.#pending.set(request.id, { resolve, reject });
      worker.postMessage(request);
    });
  }

  #start(): Worker {
    const worker = new Worker(PARSE_THREAD_URL, { name: "pemba-schema-parse" });
    worker.unref();
    worker.on("message", (answer: ParseAnswer) => {
      const pending = this.#pending.get(answer.id);
      if (pending === undefined) return;
      this.#pending.delete(answer.id);
      if (this.#pending.size === 0) worker.unref();
      if ("error" in answer) pending.reject(parseErrorFrom(answer.error));
      else pending.resolve({ text: answer.text, definition: answer.definition });
    });
    const fail = (error: unknown) => {
      if (this.#worker !== worker) return;
      this.#worker = undefined;
      for (const pending of this.#pending.values()) pending.reject(error);
      this.#pending.clear();
    };
    worker.on("error", fail);
    worker.on("exit", (code) => fail(new Error(`the schema parse thread exited with code ${code}`)));
    this.#worker = worker;
    return worker;
  }

  async close(): Promise<void> {
    const worker = this.#worker;
    if (worker === undefined) return;
    this.#worker = undefined;
    for (const pending of this.#pending.values()) pending.reject(new Error("the schema parser is closed"));
    this.#pending.clear();
    await worker.terminate();
  }
}
