/**
 * Native gRPC unary calls answered straight on the HTTP/2 stream: a call is one length-prefixed message in, one
 * out, then the status in trailers, so reading it takes no request/response objects, no async iterables and no
 * abort controller per call (connect-node's generic path, which serves everything else on the port: streams,
 * Connect, gRPC-Web, compressed messages). The answer itself is the route's handler through the request pipeline:
 * the Check's common message is decoded straight into the check route's request and its answer encoded straight
 * into the response message (@pemba/core's check-message.ts); every other message (and a Check the direct
 * decoding leaves) takes @pemba/core's `callUnary`, the path connect-node's handlers run.
 *
 * A call's `grpc-timeout` is its deadline: past it the call is answered DEADLINE_EXCEEDED and its request's
 * signal aborts (a handler that streams or waits stops); a client that resets the stream aborts it too.
 */
import type { IncomingHttpHeaders, ServerHttp2Stream } from "node:http2";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  type Answer,
  type ApiRequest,
  callUnary,
  decodeCheckRequest,
  encodeCheckResponseFrame,
  type PembaApp,
  ROUTES,
  RPC_ROUTES,
  type RpcRoute,
} from "@pemba/core";
import { encodeGrpcMessage } from "./grpc-message.ts";

const GRPC_TYPES = new Set(["application/grpc", "application/grpc+proto"]);
/** Length-prefixed message: a compression flag byte and a 4-byte big-endian length. */
const PREFIX_BYTES = 5;
const CHECK_PATH = "/base.v1.Permission/Check";
/** Header block of a successful answer (the status follows in trailers). */
const OK_HEADERS = { ":status": 200, "content-type": "application/grpc" };
const OK_TRAILERS = { "grpc-status": "0" };
const OK_OPTIONS = { waitForTrailers: true };

/** The OK status as the answer's trailers (a 'wantTrailers' listener: `this` is the stream). */
function sendOkTrailers(this: ServerHttp2Stream): void {
  this.sendTrailers(OK_TRAILERS);
}

/** A stream 'error' listener: a reset or failed stream ends the call, whose answer then goes nowhere. */
function ignoreStreamError(): void {}

/** The unary RPCs by request path (`/base.v1.Permission/Check`). */
const UNARY = new Map<string, RpcRoute>(
  RPC_ROUTES.filter((r) => r.method.methodKind === "unary").map((r) => [
    `/${r.method.parent.typeName}/${r.method.name}`,
    r,
  ]),
);

/** Milliseconds per `grpc-timeout` unit (the gRPC over HTTP/2 spec: Hours, Minutes, Seconds, milli, micro, nano). */
const TIMEOUT_UNITS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 1e-3, n: 1e-6 };

/** A `grpc-timeout` value in milliseconds: up to 8 digits and a unit; undefined when absent or not of that form. */
export function grpcTimeoutMs(value: string | string[] | undefined): number | undefined {
  if (typeof value !== "string" || value.length < 2 || value.length > 9) return undefined;
  const unit = TIMEOUT_UNITS[value[value.length - 1]!];
  if (unit === undefined) return undefined;
  let amount = 0;
  for (let i = 0; i < value.length - 1; i++) {
    const c = value.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return undefined;
    amount = amount * 10 + c;
  }
  return amount * unit;
}

/** Answers with the status alone (a trailers-only answer: the status in the one header block). */
export function failStream(stream: ServerHttp2Stream, code: Code, message: string): void {
  if (stream.destroyed || stream.closed || stream.headersSent) return;
  stream.respond(
    {
      ":status": 200,
      "content-type": "application/grpc",
      "grpc-status": String(code),
      "grpc-message": encodeGrpcMessage(message),
    },
    { endStream: true },
  );
}

/**
 * One call's deadline and cancellation: the abort controller is made only when a handler asks for the signal; the
 * timer runs only when the call has a deadline.
 */
class CallState {
  readonly #stream: ServerHttp2Stream;
  #controller: AbortController | undefined;
  #timer: NodeJS.Timeout | undefined;
  done = false;

  constructor(stream: ServerHttp2Stream, timeoutMs: number | undefined) {
    this.#stream = stream;
    if (timeoutMs !== undefined) {
      this.#timer = setTimeout(() => {
        failStream(stream, Code.DeadlineExceeded, "deadline exceeded");
        this.finish(true);
      }, timeoutMs);
    }
  }

  /** Aborted at the deadline, or when the stream closes before the answer (the client reset it). */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      this.#stream.once("close", () => this.finish(true));
    }
    return this.#controller.signal;
  }

  finish(abort: boolean): void {
    if (this.done) return;
    this.done = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    if (abort) this.#controller?.abort();
  }
}

/** Sends one message and the OK status. */
function respondMessage(stream: ServerHttp2Stream, frame: Uint8Array): void {
  stream.respond(OK_HEADERS, OK_OPTIONS);
  stream.once("wantTrailers", sendOkTrailers);
  stream.end(frame);
}

/** A message's bytes as a length-prefixed frame. */
function frameOf(bytes: Uint8Array): Buffer {
  const frame = Buffer.allocUnsafe(PREFIX_BYTES + bytes.length);
  frame[0] = 0;
  frame.writeUInt32BE(bytes.length, 1);
  frame.set(bytes, PREFIX_BYTES);
  return frame;
}

/** The check route's request for a Check decoded directly: the body is given, the tenant is the message's. */
function checkRequest(
  headers: IncomingHttpHeaders,
  tenantId: string,
  parsedBody: unknown,
  state: CallState,
): ApiRequest {
  return {
    method: "POST",
    header: (name) => {
      const value = headers[name];
      return Array.isArray(value) ? value.join(", ") : value;
    },
    text: () => Promise.reject(new Error("the check's message was decoded already")),
    param: (name) => (name === "tenant_id" ? tenantId : undefined),
    parsedBody,
    get signal() {
      return state.signal;
    },
  };
}

/**
 * A `stream` listener's first look: answers `stream` and returns true when it is a native gRPC unary call of
 * base.v1 with an uncompressed message of at most `maxBytes`; false leaves it to the generic path.
 */
export function unaryGrpcHandler(app: PembaApp, maxBytes: number) {
  const answered = (stream: ServerHttp2Stream, state: CallState) => {
    if (state.done || stream.destroyed || stream.closed) return false;
    state.finish(false);
    return true;
  };
  const failed = (stream: ServerHttp2Stream, state: CallState) => (e: unknown) => {
    if (!answered(stream, state)) return;
    const error = ConnectError.from(e);
    failStream(stream, error.code, error.rawMessage);
  };

  return (stream: ServerHttp2Stream, headers: IncomingHttpHeaders): boolean => {
    if (headers[":method"] !== "POST") return false;
    const path = headers[":path"] ?? "";
    const rpc = UNARY.get(path);
    if (rpc === undefined) return false;
    if (!GRPC_TYPES.has(headers["content-type"] ?? "")) return false;
    const encoding = headers["grpc-encoding"];
    if (encoding !== undefined && encoding !== "identity") return false;

    const state = new CallState(stream, grpcTimeoutMs(headers["grpc-timeout"]));
    const chunks: Buffer[] = [];
    let size = 0;
    stream.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes + PREFIX_BYTES) {
        if (!answered(stream, state)) return;
        failStream(stream, Code.ResourceExhausted, `message larger than ${maxBytes} bytes`);
        stream.close();
        return;
      }
      chunks.push(chunk);
    });
    stream.on("error", ignoreStreamError);
    stream.on("end", () => {
      if (state.done || stream.destroyed || stream.closed) return;
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      if (
        body.length < PREFIX_BYTES ||
        body[0] !== 0 ||
        body.readUInt32BE(1) !== body.length - PREFIX_BYTES
      ) {
        if (answered(stream, state))
          failStream(
            stream,
            Code.Internal,
            "protocol error: one uncompressed length-prefixed message expected",
          );
        return;
      }
      const bytes = body.subarray(PREFIX_BYTES);
      const decoded = path === CHECK_PATH ? decodeCheckRequest(bytes) : undefined;
      if (decoded !== undefined) {
        const answer = app.handle(
          ROUTES.check,
          checkRequest(headers, decoded.tenantId, decoded.check, state),
        )!;
        answer.then(
          (a: Answer) => {
            if (!answered(stream, state)) return;
            if (a.error !== undefined) {
              failStream(stream, a.error.code as Code, a.error.message);
              return;
            }
            const frame = encodeCheckResponseFrame(a.decision ?? "", a.checkCount ?? -1);
            if (frame === undefined)
              failStream(stream, Code.Internal, "ERROR_CODE_INTERNAL: no check decision");
            else respondMessage(stream, frame);
          },
          failed(stream, state),
        );
        return;
      }
      let message: ReturnType<typeof fromBinary>;
      try {
        message = fromBinary(rpc.method.input, bytes);
      } catch (e) {
        if (answered(stream, state))
          failStream(stream, Code.Internal, `cannot decode ${rpc.method.input.typeName}: ${String(e)}`);
        return;
      }
      const header = (name: string): string | undefined => {
        const value = headers[name];
        return Array.isArray(value) ? value.join(", ") : value;
      };
      callUnary(app, rpc, message, {
        header,
        get signal() {
          return state.signal;
        },
      }).then(
        (response) => {
          if (answered(stream, state)) respondMessage(stream, frameOf(toBinary(rpc.method.output, response)));
        },
        failed(stream, state),
      );
    });
    return true;
  };
}
