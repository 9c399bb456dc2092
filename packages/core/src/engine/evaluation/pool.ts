/**
 * What evaluations keep across requests, held by their owner (a PembaService, a validation run, a benchmark) and
 * handed to the engine in EvaluationTarget.evaluations: the last evaluation that answered synchronously, for the
 * next question to reuse (its arrays, not its contents), and the stores that answered a batch synchronously.
 */
import type { CompiledSchema } from "../../compile/index.ts";
import type { Subject } from "../../model.ts";
import type { EngineStore } from "../../store/capabilities.ts";
import { Evaluation, type EvaluationInput, type SynchronousStores } from "./evaluation.ts";

/** Only evaluations below this many entries are kept. */
const SPARE_MAX_ENTRIES = 1024;

export class EvaluationPool implements SynchronousStores {
  #spare: Evaluation | undefined = undefined;
  /**
   * Stores that answered a batch synchronously (memory, better-sqlite3). For them batching saves nothing, so later
   * evaluations read directly, one small call per read, with no pass re-runs.
   */
  readonly #synchronous = new WeakSet<EngineStore>();

  /** Remembers that `store` answered a batch synchronously (one function for every evaluation to call). */
  readonly learnSynchronous = (store: EngineStore): void => {
    this.#synchronous.add(store);
  };

  answersSynchronously(store: EngineStore): boolean {
    return this.#synchronous.has(store);
  }

  /**
   * An evaluation of the question, the caller's until it hands it back with `give`: the spare one, emptied, or a
   * new one. A question that awaits keeps its evaluation, so one asked meanwhile never gets it.
   */
  take(schema: CompiledSchema, target: EvaluationInput, subject: Subject): Evaluation {
    const spare = this.#spare;
    if (spare === undefined) return new Evaluation(schema, target, subject);
    this.#spare = undefined;
    spare.reset(schema, target, subject);
    return spare;
  }

  /** Hands back an evaluation whose question is answered, and which nothing refers to any more. */
  give(evaluation: Evaluation): void {
    if (evaluation.entries < SPARE_MAX_ENTRIES) this.#spare = evaluation;
  }
}
