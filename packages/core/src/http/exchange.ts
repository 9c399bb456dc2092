/**
 * What the request pipeline and the parts around it speak: a request as an adapter hands it in (ApiRequest), an
 * answer as it comes back (Answer), and what the observe hook sees of each (RequestInfo).
 */

export interface RequestInfo {
  method: string;
  /** The endpoint's path template, e.g. "/v1/tenants/:tenant_id/permissions/check". */
  route: string;
  /** The request's path, when no endpoint matched it (route "notFound"): what was asked for. */
  path?: string;
  status: number;
  seconds: number;
  /** The check decision (CHECK_RESULT_*) of a permission check. */
  decision?: string;
  /** An error answer's gRPC code and message, as its body says them. */
  error?: AnswerError;
}

export interface AnswerError {
  code: number;
  message: string;
  /** Permify's error code (ERROR_CODE_*); ERROR_CODE_INTERNAL for an unexpected error. */
  errorCode: string;
}

export type Observe = (info: RequestInfo) => void;

/** A request as the pipeline sees it; adapters implement it over their transport. */
export interface ApiRequest {
  method: string;
  /** A header by lower-case name (repeated headers joined with ", "). */
  header(name: string): string | undefined;
  /**
   * The body as UTF-8 text. Refused with ERROR_CODE_REQUEST_TOO_LARGE before reading when the declared
   * Content-Length is over `maxBytes`, and while reading as soon as more than `maxBytes` have arrived.
   */
  text(maxBytes: number): Promise<string>;
  /** A path parameter of the endpoint's template (`tenant_id`, `id`). */
  param(name: string): string | undefined;
  /** The request's path, without the query. */
  path?: string;
  /** Aborted when the client goes away (streaming answers stop). */
  signal?: AbortSignal;
  /** The request's URL, when the adapter has it whole (the fetch adapter); AuthZEN's discovery names its origin. */
  url?: string;
  /**
   * The body already decoded and validated by the transport, in the form the route's own reader (`RouteDef.read`)
   * gives: the native gRPC check decodes its message straight into the check request. Routes without a reader
   * ignore it.
   */
  parsedBody?: unknown;
}

/** An answer as the pipeline gives it; adapters write it to their transport. */
export interface Answer {
  status: number;
  /** [name, value, name, value, ...] */
  headers: string[];
  body: string | ReadableStream<Uint8Array> | null;
  /** The check decision (CHECK_RESULT_*), for the observe hook. */
  decision?: string;
  /** The check's check_count (with `decision`): what a transport that does not send the JSON body encodes. */
  checkCount?: number;
  /** What an error answer's body says, for the observe hook. */
  error?: AnswerError;
}
