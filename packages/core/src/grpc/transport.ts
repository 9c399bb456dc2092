/**
 * gRPC (and Connect, gRPC-Web) as another transport of the HTTP API's routes. An RPC's request message becomes the
 * JSON body its HTTP route takes (proto3 JSON with proto field names, which is Permify's HTTP wire form), the path
 * parameters come from the message's fields, and the `authorization` metadata is the header: the route's handler
 * then runs through the same request pipeline as over HTTP (auth, tenant access, validation, limits, observe). Its
 * JSON answer becomes the response message; an error answer becomes a gRPC status with the error body's code and
 * message (what Permify's gateway renders from its gRPC status, so both transports say the same).
 */
import {
  type DescMessage,
  type DescMethod,
  fromJson,
  type JsonObject,
  type JsonValue,
  type Message,
  type MessageShape,
  type Registry,
  toJson,
} from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter, type HandlerContext } from "@connectrpc/connect";
import type { PembaApp } from "../http/app.ts";
import type { Answer, ApiRequest } from "../http/pipeline.ts";
import { requestTooLarge } from "../http/request-body.ts";
import { registerHealth } from "./health.ts";
import { registerReflection } from "./reflection.ts";
import { RPC_ROUTES, type RpcRoute, SERVICES } from "./rpc-table.ts";
import { typeRegistry } from "./type-registry.ts";

const encoder = new TextEncoder();

/** Each route's path parameters and the request message's fields of the same proto names (local names). */
const PATH_FIELDS = new Map<RpcRoute, [param: string, field: string][]>(
  RPC_ROUTES.map((rpc) => [
    rpc,
    [...rpc.route.path.matchAll(/\{(\w+)\}/g)].map(([, param]) => {
      const field = rpc.method.input.fields.find((f) => f.name === param);
      if (field === undefined) throw new Error(`${rpc.method.input.typeName} has no field ${param}`);
      return [param!, field.localName];
    }),
  ]),
);

/** The route's path parameters, read from the request message. */
function pathParams(rpc: RpcRoute, message: Message): Record<string, string> {
  const params: Record<string, string> = {};
  for (const [param, field] of PATH_FIELDS.get(rpc)!) {
    const value = (message as unknown as Record<string, unknown>)[field];
    params[param] = typeof value === "string" ? value : "";
  }
  return params;
}

/** What a call brings besides its message, whichever server carries it. */
export interface RpcCallContext {
  /** A request header (metadata) by lower-case name. */
  header(name: string): string | undefined;
  signal?: AbortSignal;
}

const callContext = (ctx: HandlerContext): RpcCallContext => ({
  header: (name) => ctx.requestHeader.get(name) ?? undefined,
  signal: ctx.signal,
});

/** The RPC's request as the pipeline's `ApiRequest`: the HTTP route's JSON body, metadata as headers. */
function apiRequest(rpc: RpcRoute, message: Message, ctx: RpcCallContext, registry: Registry): ApiRequest {
  const params = pathParams(rpc, message);
  const body = toJson(rpc.method.input, message, { useProtoFieldName: true, registry }) as JsonObject;
  // a path parameter is the path's, as over HTTP (grpc-gateway takes it from the path, not the body)
  for (const name of Object.keys(params)) delete body[name];
  const text = JSON.stringify(body);
  return {
    method: rpc.route.method,
    // called on the context: a transport's context may be an object with a `header` method
    header: (name) => ctx.header(name),
    text: async (maxBytes) => {
      // UTF-8 is at most 3 bytes per UTF-16 unit: only a text near the limit is measured
      if (text.length * 3 > maxBytes && encoder.encode(text).byteLength > maxBytes) throw requestTooLarge();
      return text;
    },
    param: (name) => params[name],
    signal: ctx.signal,
  };
}

/** An error answer as the gRPC status its body names. */
function statusError(answer: Answer): ConnectError {
  const error = answer.error ?? { code: Code.Internal, message: `HTTP ${answer.status}` };
  return new ConnectError(error.message, error.code as Code);
}

async function bodyText(body: Answer["body"]): Promise<string> {
  if (body === null) return "";
  if (typeof body === "string") return body;
  return new Response(body).text();
}

/** A JSON answer as the response message (fields only Pemba's HTTP answers have, such as `expires_at`, dropped). */
function responseMessage<Desc extends DescMessage>(
  desc: Desc,
  json: JsonValue,
  registry: Registry,
): MessageShape<Desc> {
  try {
    return fromJson(desc, json, { ignoreUnknownFields: true, registry });
  } catch (e) {
    throw new ConnectError(
      `ERROR_CODE_INTERNAL: ${e instanceof Error ? e.message : String(e)}`,
      Code.Internal,
    );
  }
}

/** The NDJSON lines of a streaming answer as parsed JSON, line by line as they arrive. */
async function* ndjsonLines(body: Answer["body"], signal: AbortSignal): AsyncGenerator<JsonObject> {
  if (body === null) return;
  if (typeof body === "string") {
    for (const line of body.split("\n")) if (line !== "") yield JSON.parse(line) as JsonObject;
    return;
  }
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let pending = "";
  try {
    for (;;) {
      if (signal.aborted) return;
      const { done, value } = await reader.read();
      if (done) break;
      pending += decoder.decode(value, { stream: true });
      let end = pending.indexOf("\n");
      while (end >= 0) {
        const line = pending.slice(0, end);
        pending = pending.slice(end + 1);
        if (line !== "") yield JSON.parse(line) as JsonObject;
        end = pending.indexOf("\n");
      }
    }
    if (pending.trim() !== "") yield JSON.parse(pending) as JsonObject;
  } finally {
    // the client went away or the stream ended: the route's stream stops (a watch stops polling)
    await reader.cancel().catch(() => undefined);
  }
}

/** Runs `rpc`'s route for `message` through the pipeline. */
function run(app: PembaApp, rpc: RpcRoute, message: Message, ctx: RpcCallContext): Promise<Answer> {
  const answer = app.handle(rpc.route, apiRequest(rpc, message, ctx, typeRegistry));
  if (answer === undefined) throw new ConnectError("ERROR_CODE_NOT_IMPLEMENTED", Code.Unimplemented);
  return answer;
}

/**
 * A unary RPC's answer: the response message, or a ConnectError with the status (code and message of the HTTP
 * error body). What every server of the gRPC services runs for a unary call.
 */
export async function callUnary(
  app: PembaApp,
  rpc: RpcRoute,
  message: Message,
  ctx: RpcCallContext,
): Promise<Message> {
  const answer = await run(app, rpc, message, ctx);
  if (answer.error !== undefined) throw statusError(answer);
  return responseMessage(rpc.method.output, JSON.parse(await bodyText(answer.body)), typeRegistry);
}

export interface GrpcServicesOptions {
  /** Serves grpc.health.v1.Health (default true). */
  health?: boolean;
  /** Serves grpc.reflection.v1 and v1alpha (default true). */
  reflection?: boolean;
}

/**
 * Registers Permify's six `base.v1` services on `router`, each RPC answered by its route's handler in `app`, plus
 * health and reflection.
 */
export function registerGrpcServices(
  router: ConnectRouter,
  app: PembaApp,
  options: GrpcServicesOptions = {},
): void {
  const registry = typeRegistry;
  // the table's methods are of every kind at once for the type checker: each is registered by its kind below
  const register = router.rpc.bind(router) as (method: DescMethod, impl: unknown) => ConnectRouter;
  for (const rpc of RPC_ROUTES) {
    if (rpc.method.methodKind === "unary") {
      register(rpc.method, (message: Message, ctx: HandlerContext) =>
        callUnary(app, rpc, message, callContext(ctx)),
      );
    } else if (rpc.method.methodKind === "server_streaming") {
      register(rpc.method, async function* (message: Message, ctx: HandlerContext) {
        const answer = await run(app, rpc, message, callContext(ctx));
        if (answer.error !== undefined) throw statusError(answer);
        for await (const line of ndjsonLines(answer.body, ctx.signal)) {
          const error = line.error as { code?: number; message?: string } | undefined;
          if (error != null)
            throw new ConnectError(error.message ?? "", (error.code ?? Code.Internal) as Code);
          const json = rpc.streamLine === "result" ? (line.result ?? {}) : line;
          yield responseMessage(rpc.method.output, json, registry);
        }
      });
    }
  }
  if (options.health !== false) registerHealth(router, SERVICES);
  if (options.reflection !== false) registerReflection(router);
}
