/**
 * A TCP forwarder that delays every byte by a fixed time each way, for tests of servers a network apart (a primary
 * a region away from its replicas and from Pemba): bytes keep their order, and a connection's end or reset reaches
 * the other side after the same delay. `hold()` stops forwarding (bytes wait, as on a partitioned link) until
 * `release()`.
 */
import { connect, createServer, type Socket } from "node:net";

export interface DelayProxy {
  /** http://127.0.0.1:<port>: the target's address as seen through the delay. */
  url: string;
  port: number;
  /** Bytes now wait here until release(). */
  hold(): void;
  /** Forwards what waited, then everything as it comes (after the delay). */
  release(): void;
  /** Connections accepted so far. */
  connections(): number;
  /** Stops listening and cuts every connection. */
  close(): Promise<void>;
}

/** Forwards 127.0.0.1:<port> to `target` ("host:port" or an http:// URL), `delayMs` each way. */
export function startDelayProxy(target: string, delayMs: number): Promise<DelayProxy> {
  const to = target.includes("://") ? new URL(target) : new URL(`tcp://${target}`);
  const sockets = new Set<Socket>();
  let held = false;
  const waiting: (() => void)[] = [];
  let accepted = 0;

  /** Runs `send` after the delay, or after release() when held then. */
  const later = (send: () => void) => {
    setTimeout(() => {
      if (held) waiting.push(send);
      else send();
    }, delayMs);
  };

  const pipe = (from: Socket, into: Socket) => {
    from.on("data", (chunk) => later(() => into.writable && into.write(chunk)));
    from.on("end", () => later(() => into.end()));
    from.on("error", () => later(() => into.destroy()));
    from.on("close", () => later(() => into.destroy()));
  };

  const server = createServer((client) => {
    accepted++;
    const upstream = connect(Number(to.port), to.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
      s.setNoDelay(true);
    }
    pipe(client, upstream);
    pipe(upstream, client);
  });

  return new Promise((done, fail) => {
    server.once("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      done({
        url: `http://127.0.0.1:${port}`,
        port,
        hold: () => {
          held = true;
        },
        release: () => {
          held = false;
          for (const send of waiting.splice(0)) send();
        },
        connections: () => accepted,
        close: () =>
          new Promise((closed) => {
            for (const s of sockets) s.destroy();
            server.close(() => closed());
          }),
      });
    });
  });
}
