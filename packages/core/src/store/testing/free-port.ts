import { createServer } from "node:net";

/** A TCP port on 127.0.0.1 that is free at the moment of asking (the OS picks it; the probe closes at once). */
export function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const probe = createServer();
    probe.once("error", fail);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => done(port));
    });
  });
}
