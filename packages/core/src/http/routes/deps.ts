import { PembaError } from "../../errors.ts";
import type { PembaService } from "../../service/index.ts";
import { defaultPageSizes, type Limits } from "../limits.ts";
import type { FetchRoutes } from "../route.ts";

/** What every group of routes needs. */
export interface AppDeps {
  routes: FetchRoutes;
  service: PembaService;
  limits: Limits;
  /** Watch stream poll interval in ms. */
  watchPollMs: number;
}

/**
 * page_size 0 = the default of the endpoint's kind (limits.ts, `defaultPageSizes`); over the limit =
 * ERROR_CODE_PAGE_SIZE_EXCEEDED.
 */
export function pageSize(requested: number, kind: keyof typeof defaultPageSizes, max: number): number {
  if (requested === 0) return Math.min(defaultPageSizes[kind], max);
  if (requested > max) throw new PembaError("ERROR_CODE_PAGE_SIZE_EXCEEDED");
  return requested;
}
