/**
 * The Node server: the core wiring (createPemba: store, replica, service, app) on a store opened from a database
 * URL, served on node:http with GET /metrics, per-request JSON logs, periodic garbage collection, and a graceful
 * close (stop accepting, finish in-flight requests, close the store).
 */

import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { consoleAssets } from "@pemba/console";
import {
  COMPACT_IDLE_MS,
  createPemba,
  describeDatabase,
  type Pemba,
  replicaSettings,
  type Store,
} from "@pemba/core";
import { openStore, SchemaParseWorker } from "@pemba/core/node";
import type { Logger } from "pino";
import { assertSafeBind, resolveServeConfig, type ServeConfig } from "./config.ts";
import { type GrpcServer, startGrpcServer } from "./grpc-server.ts";
import {
  createHeapCompactor,
  keepTickObjectShape,
  limitHeapGrowth,
  MEMORY_PER_ESTIMATED_BYTE,
} from "./heap.ts";
import { pembaVersion } from "./help.ts";
import { createServerLogger, requestLog } from "./logger.ts";
import { createServerMetrics, type ServerMetrics } from "./metrics.ts";
import { apiRequestListener } from "./node-routes.ts";
import { createObservability } from "./observability.ts";
import { createOverloadGuard } from "./overload.ts";
import { refuseAmbiguousRequest, STRICT_SERVER_OPTIONS } from "./strict-http.ts";
import { createTurnBudget } from "./turn-budget.ts";

export type { AuthConfig, PresharedKey, ServeConfig } from "./config.ts";
export { resolveServeConfig } from "./config.ts";
export { createObservability, type ServerObservability } from "./observability.ts";
export { generateSchemaTypes, type SchemaTypesOptions } from "./schema-types.ts";

export interface StartServerOptions extends Partial<ServeConfig> {
  /** Defaults to a pino logger on stdout at `logLevel` (lines written in batches, see logger.ts). */
  logger?: Logger;
}

export interface RunningServer {
  /** e.g. http://127.0.0.1:3476 */
  url: string;
  /** The gRPC port's `host:port`, when it is on. */
  grpcAddress?: string;
  store: Store;
  metrics: ServerMetrics;
  /** Stops accepting, lets in-flight requests finish, closes the database. Idempotent. */
  close(): Promise<void>;
}

/** Longest a graceful close waits for in-flight requests before cutting connections. */
const SHUTDOWN_GRACE_MS = 10_000;
const GC_INTERVAL_MAX_MS = 10 * 60_000;

/**
 * `pemba serve`'s defaults under the options given (port 0: any free port, for programmatic use; no gRPC port
 * unless one is given).
 */
function serveConfig(options: Partial<ServeConfig>): ServeConfig {
  const given = Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined));
  return { ...resolveServeConfig({}, {}), port: 0, grpcPort: 0, ...given };
}

export async function startServer({
  logger: given,
  ...options
}: StartServerOptions = {}): Promise<RunningServer> {
  keepTickObjectShape();
  const config = serveConfig(options);
  limitHeapGrowth(config.heapGrowthPercent);
  assertSafeBind(config);
  const ownLogger = given === undefined ? createServerLogger(config.logLevel) : undefined;
  const logger = given ?? ownLogger!.logger;
  const logRequest = ownLogger?.logRequest ?? requestLog(logger);
  const metrics = createServerMetrics();
  const turnBudget = createTurnBudget();
  const observability = createObservability(config, {
    onDrop: metrics.decisionDropped,
    onError: (error) => logger.error({ err: error }, "decision log write failed"),
  });
  const pemba = await createPemba(
    { ...config, replica: replicaSettings(config, MEMORY_PER_ESTIMATED_BYTE) },
    {
      name: "node",
      openStore: (database, readReplicas) =>
        openStore(database, { onQuery: metrics.observeQuery, pgPoolSize: config.pgPoolSize, readReplicas }),
      replica: "startup",
      logger,
      observe: (info) => {
        metrics.observeRequest(info);
        logRequest(info);
      },
      admit: turnBudget.admit,
      observability,
      metrics: async () => ({
        contentType: metrics.registry.contentType,
        body: await metrics.registry.metrics(),
      }),
      version: pembaVersion(),
      console: consoleAssets,
      // schema writes are parsed on a worker thread: their CPU and garbage stay off the event loop
      schemaParser: new SchemaParseWorker(),
    },
  );
  const { store, app } = pemba;
  metrics.watchWorkingSet(() => pemba.workingSet);

  const compactor = createHeapCompactor({
    minBytes: config.compactAfterWritesMb * 1048576,
    idleMs: COMPACT_IDLE_MS,
    log: (fields, message) => logger.info(fields, message),
  });

  const overload = createOverloadGuard({ shedLagMs: config.shedLagMs, maxInFlight: config.maxInFlight });
  let server: Server;
  let connections: Connections;
  let grpc: GrpcServer | undefined;
  try {
    // The API routes that do not stream are answered straight on node:http (no Request/Response objects);
    // everything else goes through Hono (node-routes.ts).
    const listener = apiRequestListener(app, (route, req) => {
      if (route.write) compactor.noteWrite(Number(req.headers["content-length"]));
    });
    const open: Connections = { sockets: new Set(), closing: false };
    connections = open;
    server = createServer(STRICT_SERVER_OPTIONS, (req, res) => {
      if (refuseAmbiguousRequest(req, res)) return;
      if (overload.shed(req, res)) return;
      // a request on a keep-alive connection during the shutdown: answered, then the connection closes
      if (open.closing) res.shouldKeepAlive = false;
      listener(req, res);
    });
    trackConnections(server, open);
    await listen(server, config.port, config.host);
    if (config.grpcPort !== 0) {
      const http = server;
      grpc = await startGrpcServer(app, {
        host: config.host,
        port: config.grpcPort,
        tls: config.grpcTls,
        overload,
      }).catch((error: unknown) => {
        http.close();
        throw error;
      });
    }
  } catch (error) {
    await pemba.close();
    await observability?.close();
    throw error;
  }

  const gcTimer = startGarbageCollection(pemba, config.gcWindowMs, logger);
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;
  logger.info(
    { url, database: describeDatabase(config.database), store: store.kind, auth: config.auth.mode },
    `pemba listening on ${url}`,
  );
  if (grpc !== undefined) {
    logger.info(
      { grpc: grpc.address, tls: grpc.tls },
      `pemba gRPC listening on ${grpc.address}${grpc.tls ? " (TLS)" : ""}`,
    );
  }

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      if (gcTimer) clearInterval(gcTimer);
      compactor.close();
      overload.close();
      pemba.service.watches.close(); // open watch streams end now instead of holding the shutdown
      await Promise.all([closeGracefully(server, connections), grpc?.close(SHUTDOWN_GRACE_MS)]);
      await observability?.close();
      await pemba.close();
      logger.info({ database: describeDatabase(config.database) }, "pemba stopped; database closed");
      await ownLogger?.close();
    })();
    return closing;
  };
  return { url, grpcAddress: grpc?.address, store, metrics, close };
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
}

/**
 * Open connections and whether the server is shutting down. Once it is, every response still to be written says
 * `Connection: close`: a keep-alive client then opens a new connection for its next request (refused, so it can
 * go elsewhere) instead of writing it on a socket the server is about to close (ECONNRESET).
 */
interface Connections {
  readonly sockets: Set<Socket>;
  closing: boolean;
}

function trackConnections(server: Server, connections: Connections): void {
  server.on("connection", (socket: Socket) => {
    connections.sockets.add(socket);
    socket.once("close", () => connections.sockets.delete(socket));
  });
}

function closeGracefully(server: Server, connections: Connections): Promise<void> {
  connections.closing = true;
  for (const socket of connections.sockets) {
    // the response in flight on the socket (Node keeps it there until it is finished)
    const res = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
    // Node then writes `Connection: close` and ends the socket after the response
    if (res !== undefined && res !== null && !res.headersSent) res.shouldKeepAlive = false;
  }
  return new Promise((resolve) => {
    // close() stops accepting and closes idle keep-alive connections once; connections that finish their
    // in-flight request later become idle and are closed by the sweep below.
    const sweep = setInterval(() => server.closeIdleConnections(), 50);
    const force = setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS);
    server.close(() => {
      clearInterval(sweep);
      clearTimeout(force);
      resolve();
    });
  });
}

function startGarbageCollection(pemba: Pemba, windowMs: number, logger: Logger): NodeJS.Timeout | undefined {
  if (windowMs <= 0) return undefined;
  const timer = setInterval(
    () => {
      pemba.gc().then(
        (removed) => logger.debug({ removed }, "garbage collection"),
        (error: unknown) => logger.error({ err: error }, "garbage collection failed"),
      );
    },
    Math.min(windowMs, GC_INTERVAL_MAX_MS),
  );
  timer.unref();
  return timer;
}
