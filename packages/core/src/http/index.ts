export {
  type AppOptions,
  type ConsoleAssets,
  createApp,
  type PembaApp,
  PUBLIC_PATH_CHOICES,
  type PublicPath,
} from "./app.ts";
export type {
  AuthConfig,
  OidcConfig,
  PresharedKey,
  Principal,
} from "./auth/index.ts";
export {
  attributeValueFromWire,
  attributeValueToWire,
  DEFAULT_EXPLAIN_BYTES,
  DEFAULT_EXPLAIN_NODES,
  type ExplainOptions,
  type ExplainResponse,
  explainToWire,
  type ProofValue,
  schemaDiffToWire,
  type WireProofNode,
} from "./convert.ts";
export type { CorsOptions } from "./cors.ts";
export { errorResponse, errorResponseParts } from "./error-response.ts";
export { fetchRoutes } from "./fetch-routes.ts";
export { defaultLimits, type Limits } from "./limits.ts";
export type { Answer, AnswerError, ApiRequest, Observe, RequestInfo } from "./pipeline.ts";
export { readStreamText, requestTooLarge } from "./request-body.ts";
export { type DecodedMatch, decodedParams, routeMatcher } from "./route-matcher.ts";
export {
  type ApiMethod,
  type ApiRoute,
  AUTHZEN_ROOT_ROUTES,
  AUTHZEN_ROUTES,
  matchRoute,
  ROUTE_LIST,
  ROUTES,
  type RouteMatch,
} from "./route-table.ts";
