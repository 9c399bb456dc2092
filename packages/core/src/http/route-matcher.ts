/**
 * A request line's route in the table (`matchRoute`) with its path parameters percent-decoded, kept for the next
 * request with the same line: the adapters that answer the table's routes without Hono's router (node:http's and
 * the fetch one, fetch-routes.ts) look it up once per request.
 */
import { matchRoute, type RouteMatch } from "./route-table.ts";

/** A match's path parameters, percent-decoded; undefined when one of them is not valid percent-encoding. */
export function decodedParams(match: RouteMatch): Record<string, string> | undefined {
  const params: Record<string, string> = {};
  try {
    for (const name in match.params) params[name] = decodeURIComponent(match.params[name]!);
  } catch {
    return undefined;
  }
  return params;
}

/** A request line's route: the table's match and its path parameters percent-decoded (see `decodedParams`). */
export interface DecodedMatch {
  readonly match: RouteMatch;
  readonly params: Record<string, string> | undefined;
}

/** Request lines (method and URL) whose route is kept: a client's requests repeat a few URLs. */
const MATCHES_KEPT = 1024;

/**
 * `matchRoute` and `decodedParams` with the results of the last request lines kept (at most MATCHES_KEPT; all
 * forgotten when full): a check's URL is the same for every check of a tenant, and splitting, walking and decoding
 * it is per-request work. The kept parameters are only read.
 */
export function routeMatcher(): (method: string, url: string) => DecodedMatch | undefined {
  const kept = new Map<string, Map<string, DecodedMatch | undefined>>();
  let size = 0;
  return (method, url) => {
    let byUrl = kept.get(method);
    const found = byUrl?.get(url);
    if (found !== undefined || byUrl?.has(url)) return found;
    const match = matchRoute(method, url);
    const node = match === undefined ? undefined : { match, params: decodedParams(match) };
    if (size >= MATCHES_KEPT) {
      kept.clear();
      size = 0;
      byUrl = undefined;
    }
    if (byUrl === undefined) {
      byUrl = new Map();
      kept.set(method, byUrl);
    }
    byUrl.set(url, node);
    size++;
    return node;
  };
}
