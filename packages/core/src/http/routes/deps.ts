import { PembaError } from "../../errors.ts";
import type { PembaService } from "../../service/index.ts";
import type { Limits } from "../limits.ts";
import type { FetchRoutes } from "../route.ts";

/** What every group of routes needs. */
export interface AppDeps {
  routes: FetchRoutes;
  service: PembaService;
  limits: Limits;
  /** Watch stream poll interval in ms. */
  watchPollMs: number;
}

/** page_size 0 = the endpoint's default; over the limit = ERROR_CODE_PAGE_SIZE_EXCEEDED. */
export function pageSize(requested: number, fallback: number, max: number): number {
  if (requested === 0) return Math.min(fallback, max);
  if (requested > max) throw new PembaError("ERROR_CODE_PAGE_SIZE_EXCEEDED");
  return requested;
}
