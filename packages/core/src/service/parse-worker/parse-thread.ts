/**
 * The schema parse worker thread's entry (Node only; started by SchemaParseWorker): parses and checks each text it
 * is sent (a partial write: applies the partials to the base's text first), one at a time, and answers the text and
 * its SchemaDefinition (structured clone) or the error as data. The parser's tokens and trees are garbage of this
 * thread's heap, collected here, not on the event loop's.
 */
import { parentPort } from "node:worker_threads";
import { parseSchema } from "../../schema/parse-schema.ts";
import type { EntityPartials } from "../../schema/partial.ts";
import { parseErrorData, partialWriteText } from "./schema-parser.ts";

export interface ParseRequest {
  id: number;
  text: string;
  /** A partial write: `text` is the base's printed text. */
  partials?: Record<string, EntityPartials>;
}

parentPort!.on("message", ({ id, text, partials }: ParseRequest) => {
  try {
    const written = partials === undefined ? text : partialWriteText(text, partials);
    parentPort!.postMessage({ id, text: written, definition: parseSchema(written) });
  } catch (e) {
    parentPort!.postMessage({ id, error: parseErrorData(e) });
  }
});
