/**
 * grpc.health.v1.Health: the server (service "") and each served service answer SERVING while the process runs
 * (Permify registers the same); an unknown service name is NOT_FOUND. Watch sends the status once and stays open
 * until the client leaves; List names them all.
 */
import type { DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter } from "@connectrpc/connect";
import { Health, HealthCheckResponse_ServingStatus } from "./gen/grpc/health/v1/health_pb.js";

export function registerHealth(router: ConnectRouter, services: readonly DescService[]): void {
  const known = new Set(["", Health.typeName, ...services.map((s) => s.typeName)]);
  const statusOf = (service: string) => {
    if (!known.has(service)) throw new ConnectError("unknown service", Code.NotFound);
    return { status: HealthCheckResponse_ServingStatus.SERVING };
  };
  router.service(Health, {
    check: (req) => statusOf(req.service),
    list: () => ({
      statuses: Object.fromEntries([...known].map((name) => [name, statusOf(name)])),
    }),
    async *watch(req, ctx) {
      yield statusOf(req.service);
      await new Promise<void>((resolve) => {
        if (ctx.signal.aborted) resolve();
        ctx.signal.addEventListener("abort", () => resolve(), { once: true });
      });
    },
  });
}
