/**
 * Shared by lookup-entity and lookup-subject: candidate ids (an over-approximation from a walk over the data) are
 * sorted, resumed after the continuous token, and confirmed with normal checks in chunks until one more than a
 * page is found. So every returned id is one that check allows, and paging returns every id exactly once.
 */
import { PembaError } from "../errors.ts";
import type { Context } from "../model.ts";
import { evaluateMany } from "./check.ts";
import { type Evaluation, TRUE } from "./evaluation/evaluation.ts";
import type { CheckQuery } from "./types.ts";

const DEFAULT_PAGE_SIZE = 1000;
const CONFIRM_CHUNK = 100;

export function encodeContinuousToken(lastId: string): string {
  return btoa(String.fromCharCode(...new TextEncoder().encode(lastId)));
}

export function decodeContinuousToken(token: string): string {
  try {
    const bytes = Uint8Array.from(atob(token), (c) => c.charCodeAt(0));
    const id = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    if (id === "") throw new Error("empty");
    return id;
  } catch {
    throw new PembaError("ERROR_CODE_INVALID_CONTINUOUS_TOKEN");
  }
}

/** Byte-wise order like Go's sort.Strings for the ASCII ids the API admits. */
export const compareIds = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

export async function confirmPage(
  evaluation: Evaluation,
  candidates: Iterable<string>,
  query: (id: string) => CheckQuery,
  depth: number,
  pageSize: number,
  continuousToken: string | undefined,
): Promise<{ ids: string[]; continuousToken: string }> {
  const size = pageSize > 0 ? pageSize : DEFAULT_PAGE_SIZE;
  let sorted = [...new Set(candidates)].sort(compareIds);
  if (continuousToken) {
    const after = decodeContinuousToken(continuousToken);
    sorted = sorted.filter((id) => id > after);
  }
  const allowed: string[] = [];
  for (let start = 0; start < sorted.length && allowed.length <= size; start += CONFIRM_CHUNK) {
    const chunk = sorted.slice(start, start + CONFIRM_CHUNK);
    const { results, errors } = await evaluateMany(evaluation, chunk.map(query), depth);
    for (let i = 0; i < chunk.length && allowed.length <= size; i++) {
      if (errors[i] !== undefined) throw errors[i];
      if (results[i] === TRUE) allowed.push(chunk[i]);
    }
  }
  if (allowed.length > size) {
    const page = allowed.slice(0, size);
    return { ids: page, continuousToken: encodeContinuousToken(page[page.length - 1]) };
  }
  return { ids: allowed, continuousToken: "" };
}

/** Ids of `type` mentioned by the request's contextual tuples and attributes. */
export function contextIds(context: Context | undefined, type: string): string[] {
  if (!context) return [];
  const ids: string[] = [];
  for (const t of context.tuples) {
    if (t.entity.type === type) ids.push(t.entity.id);
    if (t.subject.type === type) ids.push(t.subject.id);
  }
  for (const a of context.attributes) if (a.entity.type === type) ids.push(a.entity.id);
  return ids;
}
