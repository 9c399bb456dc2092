/**
 * `client.authzen`: the OpenID AuthZEN Authorization API 1.0 of the client's tenant
 * (`/v1/tenants/{tenant}/access/v1/...`). Every call is a read: retried like the other reads.
 */
import type { CallOptions, Transport } from "./transport.ts";
import type {
  AccessDecision,
  AccessEvaluationRequest,
  AccessEvaluationsRequest,
  AccessEvaluationsResponse,
  ActionSearchRequest,
  ActionSearchResponse,
  AuthzenConfiguration,
  EntitySearchResponse,
  ResourceSearchRequest,
  SubjectSearchRequest,
} from "./wire.gen.ts";

/** A batch: top-level subject, action, resource and context are the defaults of each item's missing ones. */
export type AccessEvaluationsInput = Omit<AccessEvaluationsRequest, "evaluations"> & {
  evaluations?: Partial<AccessEvaluationRequest>[];
};

export class AuthzenClient {
  readonly #transport: Transport;
  readonly #base: string;

  /** `base`: the decision point's path (`/v1/tenants/t1`). */
  constructor(transport: Transport, base: string) {
    this.#transport = transport;
    this.#base = base;
  }

  #post<T>(endpoint: string, body: unknown, call?: CallOptions): Promise<T> {
    return this.#transport.json<T>("POST", `${this.#base}/access/v1/${endpoint}`, body, true, call);
  }

  /** Can the subject do the action on the resource? `{decision}`; a closed decision may say why in `context`. */
  evaluate(req: AccessEvaluationRequest, call?: CallOptions): Promise<AccessDecision> {
    return this.#post("evaluation", req, call);
  }

  /** Up to 100 evaluations in request order (fewer when `options.evaluations_semantic` stops early). */
  async evaluations(req: AccessEvaluationsInput, call?: CallOptions): Promise<AccessDecision[]> {
    const out = await this.#post<AccessEvaluationsResponse>("evaluations", req, call);
    return out.evaluations ?? (out.decision === undefined ? [] : [{ decision: out.decision }]);
  }

  /** One page of the subjects of `subject.type` that may do the action on the resource. */
  searchSubjects(req: SubjectSearchRequest, call?: CallOptions): Promise<EntitySearchResponse> {
    return this.#post("search/subject", req, call);
  }

  /** One page of the resources of `resource.type` the subject may do the action on. */
  searchResources(req: ResourceSearchRequest, call?: CallOptions): Promise<EntitySearchResponse> {
    return this.#post("search/resource", req, call);
  }

  /** One page of the actions the subject may do on the resource. */
  searchActions(req: ActionSearchRequest, call?: CallOptions): Promise<ActionSearchResponse> {
    return this.#post("search/action", req, call);
  }

  /** Every result of a search, page after page (`page.token` is followed until it is empty). */
  async *all<R>(
    search: (req: {
      page?: { token?: string; limit?: number };
    }) => Promise<{ page?: { next_token: string }; results: R[] }>,
    limit?: number,
  ): AsyncGenerator<R> {
    let token = "";
    do {
      const page = await search({
        page: { ...(limit === undefined ? {} : { limit }), ...(token ? { token } : {}) },
      });
      yield* page.results;
      token = page.page?.next_token ?? "";
    } while (token !== "");
  }

  /** The decision point's metadata (`/.well-known/authzen-configuration`). */
  configuration(call?: CallOptions): Promise<AuthzenConfiguration> {
    return this.#transport.json(
      "GET",
      `${this.#base}/.well-known/authzen-configuration`,
      undefined,
      true,
      call,
    );
  }
}
