/**
 * Permify's gRPC services (`base.v1`, from its protos) mapped onto the route table: each RPC is served by the HTTP
 * route that Permify's own gateway maps it to (the `google.api.http` option of the same proto method), so an RPC
 * and its HTTP endpoint run one handler through one pipeline.
 */
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { type ApiRoute, ROUTES } from "../http/route-table.ts";
import { Bundle, Data, Permission, Schema, Tenancy, Watch } from "./gen/base/v1/service_pb.js";

/** How a line of a streaming route's NDJSON answer holds the RPC's response message. */
export type StreamLine =
  /** `{"result": {...message}}`, as grpc-gateway streams it (lookup entity stream). */
  | "result"
  /** The line is the message (`{"changes": {...}}`, Pemba's HTTP watch). */
  | "message";

export interface RpcRoute {
  method: DescMethod;
  route: ApiRoute;
  /** For a server stream: how its NDJSON lines hold the messages. */
  streamLine?: StreamLine;
}

export const SERVICES: readonly DescService[] = [Permission, Data, Schema, Bundle, Tenancy, Watch];

/** Every `base.v1` RPC by its full method name and the route serving it. */
const ROUTE_OF_RPC: Record<string, ApiRoute> = {
  "base.v1.Permission.Check": ROUTES.check,
  "base.v1.Permission.BulkCheck": ROUTES.bulkCheck,
  "base.v1.Permission.Expand": ROUTES.expand,
  "base.v1.Permission.LookupEntity": ROUTES.lookupEntity,
  "base.v1.Permission.LookupEntityStream": ROUTES.lookupEntityStream,
  "base.v1.Permission.LookupSubject": ROUTES.lookupSubject,
  "base.v1.Permission.SubjectPermission": ROUTES.subjectPermission,
  "base.v1.Data.Write": ROUTES.dataWrite,
  "base.v1.Data.WriteRelationships": ROUTES.relationshipsWrite,
  "base.v1.Data.ReadRelationships": ROUTES.relationshipsRead,
  "base.v1.Data.ReadAttributes": ROUTES.attributesRead,
  "base.v1.Data.Delete": ROUTES.dataDelete,
  "base.v1.Data.DeleteRelationships": ROUTES.relationshipsDelete,
  "base.v1.Data.RunBundle": ROUTES.bundleRun,
  "base.v1.Schema.Write": ROUTES.schemasWrite,
  "base.v1.Schema.PartialWrite": ROUTES.schemasPartialWrite,
  "base.v1.Schema.Read": ROUTES.schemasRead,
  "base.v1.Schema.List": ROUTES.schemasList,
  "base.v1.Bundle.Write": ROUTES.bundleWrite,
  "base.v1.Bundle.Read": ROUTES.bundleRead,
  "base.v1.Bundle.Delete": ROUTES.bundleDelete,
  "base.v1.Tenancy.Create": ROUTES.tenantsCreate,
  "base.v1.Tenancy.Delete": ROUTES.tenantsDelete,
  "base.v1.Tenancy.List": ROUTES.tenantsList,
  "base.v1.Watch.Watch": ROUTES.watch,
};

const STREAM_LINES: Partial<Record<string, StreamLine>> = {
  "base.v1.Permission.LookupEntityStream": "result",
  "base.v1.Watch.Watch": "message",
};

/** Every RPC of `SERVICES` with its route; throws at load when the protos and the table disagree. */
export const RPC_ROUTES: readonly RpcRoute[] = SERVICES.flatMap((service) =>
  service.methods.map((method) => {
    const name = `${service.typeName}.${method.name}`;
    const route = ROUTE_OF_RPC[name];
    if (route === undefined) throw new Error(`no route for RPC ${name}`);
    const streaming = method.methodKind === "server_streaming";
    if (streaming !== (route.endpoint.stream === true)) {
      throw new Error(`RPC ${name} and route ${route.operationId} disagree on streaming`);
    }
    return { method, route, streamLine: streaming ? STREAM_LINES[name] : undefined };
  }),
);
