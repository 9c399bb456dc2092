export { authzenConfiguration } from "./discovery.ts";
export { AUTHZEN_DEPTH, evaluate, evaluateMany } from "./evaluate.ts";
export { decodeId, ENCODED_ID_PREFIX, encodeId } from "./ids.ts";
export { searchActions, searchResources, searchSubjects } from "./search.ts";
export * from "./wire.ts";
