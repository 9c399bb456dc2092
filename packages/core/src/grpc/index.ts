/** Permify's gRPC API (base.v1, health, reflection) as another transport of the HTTP API's route table. */
export { type DecodedCheck, decodeCheckRequest, encodeCheckResponseFrame } from "./check-message.ts";
export { type ConnectFetchHandler, createConnectFetchHandler } from "./fetch.ts";
export { RPC_ROUTES, type RpcRoute, SERVICES } from "./rpc-table.ts";
export {
  callUnary,
  type GrpcServicesOptions,
  type RpcCallContext,
  registerGrpcServices,
} from "./transport.ts";
export { typeRegistry as grpcTypeRegistry } from "./type-registry.ts";
