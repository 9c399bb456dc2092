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
import { fromBinary, type Message, toBinary } from "@bufbuild/protobuf";
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
/** No `date` header: gRPC has no use for it (grpc-go servers, Permify's among them, send none). */
const OK_OPTIONS = { waitForTrailers: true, sendDate: false };

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

/** A header of a call by lower-case name (repeated ones joined with ", "). */
function headerOf(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value.join(", ") : value;
}

/** Where a call keeps its state on its stream, for the module's listeners (`this` is the stream). */
const CALL = Symbol("unaryCall");
type CallStream = ServerHttp2Stream & { [CALL]?: UnaryCall };

/**
 * One native unary call: its request message as it arrives, its deadline and its cancellation. The abort
 * controller is made only when a handler asks for the signal; the timer runs only when the call has a deadline.
 * The stream's listeners are the module's functions below, which find the call on the stream, so a call costs no
 * closures of its own.
 */
class UnaryCall {
  readonly stream: CallStream;
  readonly headers: IncomingHttpHeaders;
  readonly path: string;
  readonly rpc: RpcRoute;
  readonly app: PembaApp;
  readonly maxBytes: number;
  /** The message's chunks: the first alone (a unary message is usually one), then all in `chunks`. */
  first: Buffer | undefined;
  chunks: Buffer[] | undefined;
  size = 0;
  done = false;
  #controller: AbortController | undefined;
  #timer: NodeJS.Timeout | undefined;

  constructor(
    stream: CallStream,
    headers: IncomingHttpHeaders,
    path: string,
    rpc: RpcRoute,
    app: PembaApp,
    maxBytes: number,
    timeoutMs: number | undefined,
  ) {
    this.stream = stream;
    this.headers = headers;
    this.path = path;
    this.rpc = rpc;
    this.app = app;
    this.maxBytes = maxBytes;
    if (timeoutMs !== undefined) this.#timer = setTimeout(onDeadline, timeoutMs, this);
  }

  /** Aborted at the deadline, or when the stream closes before the answer (the client reset it). */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      this.stream.once("close", onCallClose);
    }
    return this.#controller.signal;
  }

  finish(abort: boolean): void {
    if (this.done) return;
    this.done = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    if (abort) this.#controller?.abort();
  }

  /** Takes the answer's turn: true when the call is still open (it is then finished); false when it is over. */
  answered(): boolean {
    if (this.done || this.stream.destroyed || this.stream.closed) return false;
    this.finish(false);
    return true;
  }

  fail(e: unknown): void {
    if (!this.answered()) return;
    const error = ConnectError.from(e);
    failStream(this.stream, error.code, error.rawMessage);
  }

  answerCheck(a: Answer): void {
    if (!this.answered()) return;
    if (a.error !== undefined) {
      failStream(this.stream, a.error.code as Code, a.error.message);
      return;
    }
    const frame = encodeCheckResponseFrame(a.decision ?? "", a.checkCount ?? -1);
    if (frame === undefined) failStream(this.stream, Code.Internal, "ERROR_CODE_INTERNAL: no check decision");
    else respondMessage(this.stream, frame);
  }

  answerMessage(response: Message): void {
    if (this.answered()) respondMessage(this.stream, frameOf(toBinary(this.rpc.method.output, response)));
  }

  /** The call's whole message is in: answer it. */
  run(): void {
    const body = this.chunks !== undefined ? Buffer.concat(this.chunks) : (this.first ?? Buffer.alloc(0));
    this.first = undefined;
    this.chunks = undefined;
    if (body.length < PREFIX_BYTES || body[0] !== 0 || body.readUInt32BE(1) !== body.length - PREFIX_BYTES) {
      if (this.answered())
        failStream(
          this.stream,
          Code.Internal,
          "protocol error: one uncompressed length-prefixed message expected",
        );
      return;
    }
    const bytes = body.subarray(PREFIX_BYTES);
    const decoded = this.path === CHECK_PATH ? decodeCheckRequest(bytes) : undefined;
    if (decoded !== undefined) {
      this.app.handle(ROUTES.check, new CheckCallRequest(this, decoded.tenantId, decoded.check))!.then(
        (a: Answer) => this.answerCheck(a),
        (e: unknown) => this.fail(e),
      );
      return;
    }
    let message: Message;
    try {
      message = fromBinary(this.rpc.method.input, bytes);
    } catch (e) {
      if (this.answered())
        failStream(
          this.stream,
          Code.Internal,
          `cannot decode ${this.rpc.method.input.typeName}: ${String(e)}`,
        );
      return;
    }
    callUnary(this.app, this.rpc, message, this).then(
      (response) => this.answerMessage(response),
      (e: unknown) => this.fail(e),
    );
  }

  /** The call context of the general path (`callUnary`): the call's headers and signal. */
  header(name: string): string | undefined {
    return headerOf(this.headers, name);
  }
}

/** The call's deadline: DEADLINE_EXCEEDED, and its request's signal aborts. */
function onDeadline(call: UnaryCall): void {
  failStream(call.stream, Code.DeadlineExceeded, "deadline exceeded");
  call.finish(true);
}

/** The stream closed (answered, or reset by the client): a handler still at work is aborted. */
function onCallClose(this: CallStream): void {
  this[CALL]?.finish(true);
}

function onCallData(this: CallStream, chunk: Buffer): void {
  const call = this[CALL]!;
  if (call.done) return;
  call.size += chunk.length;
  if (call.size > call.maxBytes + PREFIX_BYTES) {
    call.first = undefined;
    call.chunks = undefined;
    if (!call.answered()) return;
    failStream(this, Code.ResourceExhausted, `message larger than ${call.maxBytes} bytes`);
    this.close();
    return;
  }
  if (call.first === undefined && call.chunks === undefined) call.first = chunk;
  else {
    if (call.chunks === undefined) {
      call.chunks = [call.first!];
      call.first = undefined;
    }
    call.chunks.push(chunk);
  }
}

function onCallEnd(this: CallStream): void {
  const call = this[CALL]!;
  if (call.done || this.destroyed || this.closed) return;
  call.run();
}

/** The check route's request for a Check decoded directly: the body is given, the tenant is the message's. */
class CheckCallRequest implements ApiRequest {
  readonly method = "POST";
  readonly #call: UnaryCall;
  readonly #tenantId: string;
  readonly parsedBody: unknown;

  constructor(call: UnaryCall, tenantId: string, parsedBody: unknown) {
    this.#call = call;
    this.#tenantId = tenantId;
    this.parsedBody = parsedBody;
  }

  header(name: string): string | undefined {
    return headerOf(this.#call.headers, name);
  }

  text(): Promise<string> {
    return Promise.reject(new Error("the check's message was decoded already"));
  }

  param(name: string): string | undefined {
    return name === "tenant_id" ? this.#tenantId : undefined;
  }

  get signal(): AbortSignal {
    return this.#call.signal;
  }
}

/** Sends one message and the OK status. */
function respondMessage(stream: ServerHttp2Stream, frame: Uint8Array): void {
  stream.respond(OK_HEADERS, OK_OPTIONS);
  // 'wantTrailers' comes once per stream: a plain listener, no once-wrapper per call
  stream.on("wantTrailers", sendOkTrailers);
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

/**
 * A `stream` listener's first look: answers `stream` and returns true when it is a native gRPC unary call of
 * base.v1 with an uncompressed message of at most `maxBytes`; false leaves it to the generic path.
 */
export function unaryGrpcHandler(app: PembaApp, maxBytes: number) {
  return (stream: CallStream, headers: IncomingHttpHeaders): boolean => {
    if (headers[":method"] !== "POST") return false;
    const path = headers[":path"] ?? "";
    const rpc = UNARY.get(path);
    if (rpc === undefined) return false;
    if (!GRPC_TYPES.has(headers["content-type"] ?? "")) return false;
    const encoding = headers["grpc-encoding"];
    if (encoding !== undefined && encoding !== "identity") return false;

    stream[CALL] = new UnaryCall(
      stream,
      headers,
      path,
      rpc,
      app,
      maxBytes,
      grpcTimeoutMs(headers["grpc-timeout"]),
    );
    stream.on("data", onCallData);
    stream.on("error", ignoreStreamError);
    stream.on("end", onCallEnd);
    return true;
  };
}
