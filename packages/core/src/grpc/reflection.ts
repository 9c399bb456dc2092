/**
 * gRPC server reflection (grpc.reflection.v1 and v1alpha, the same messages under two names), so grpcurl and
 * other tools list the services and describe their messages without the protos at hand. Files are answered with
 * their imports (transitively), which is what grpcurl expects; extensions are not indexed (Permify's services
 * declare none a client needs).
 */
import { create, type DescFile, type DescMessage, type DescService, toBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import type { ConnectRouter } from "@connectrpc/connect";
import { Health } from "./gen/grpc/health/v1/health_pb.js";
import * as v1 from "./gen/grpc/reflection/v1/reflection_pb.js";
import * as v1alpha from "./gen/grpc/reflection/v1alpha/reflection_pb.js";
import { SERVICES } from "./rpc-table.ts";
import { FILES, typeRegistry } from "./type-registry.ts";

/** gRPC's NOT_FOUND, the error code reflection answers for an unknown file or symbol. */
const NOT_FOUND = 5;

const SERVED: readonly DescService[] = [...SERVICES, Health, v1.ServerReflection, v1alpha.ServerReflection];

/** The file declaring `symbol`: a message, enum, service, or a method or field of one. */
function fileOfSymbol(symbol: string): DescFile | undefined {
  const direct = typeRegistry.get(symbol) as { file?: DescFile } | undefined;
  if (direct?.file !== undefined) return direct.file;
  const service = typeRegistry.getService(symbol);
  if (service !== undefined) return service.file;
  const dot = symbol.lastIndexOf(".");
  return dot < 0 ? undefined : fileOfSymbol(symbol.slice(0, dot));
}

/** `file` and everything it imports, as serialized FileDescriptorProtos, the file first. */
function withImports(file: DescFile): Uint8Array[] {
  const seen = new Set<string>();
  const out: Uint8Array[] = [];
  const add = (f: DescFile): void => {
    if (seen.has(f.proto.name)) return;
    seen.add(f.proto.name);
    out.push(toBinary(FileDescriptorProtoSchema, f.proto));
    for (const dep of f.dependencies) add(dep);
  };
  add(file);
  return out;
}

type Request = v1.ServerReflectionRequest | v1alpha.ServerReflectionRequest;

/** The `message_response` oneof answering `req` (the same shape in v1 and v1alpha). */
function answer(req: Request) {
  const found = (file: DescFile | undefined, what: string) =>
    file === undefined
      ? {
          case: "errorResponse" as const,
          value: { errorCode: NOT_FOUND, errorMessage: `${what} not found` },
        }
      : { case: "fileDescriptorResponse" as const, value: { fileDescriptorProto: withImports(file) } };
  const r = req.messageRequest;
  switch (r.case) {
    case "listServices":
      return {
        case: "listServicesResponse" as const,
        value: { service: SERVED.map((s) => ({ name: s.typeName })) },
      };
    case "fileByFilename":
      return found(FILES.get(r.value), `file ${r.value}`);
    case "fileContainingSymbol":
      return found(fileOfSymbol(r.value), `symbol ${r.value}`);
    case "fileContainingExtension":
      return found(undefined, `extension ${r.value.containingType}:${r.value.extensionNumber}`);
    case "allExtensionNumbersOfType":
      return {
        case: "allExtensionNumbersResponse" as const,
        value: { baseTypeName: r.value, extensionNumber: [] },
      };
    default:
      return { case: "errorResponse" as const, value: { errorCode: 3, errorMessage: "empty request" } };
  }
}

export function registerReflection(router: ConnectRouter): void {
  for (const version of [v1, v1alpha]) {
    const responseSchema: DescMessage = version.ServerReflectionResponseSchema;
    router.service(version.ServerReflection, {
      async *serverReflectionInfo(requests: AsyncIterable<Request>) {
        for await (const req of requests) {
          yield create(responseSchema, {
            validHost: req.host,
            originalRequest: req,
            messageResponse: answer(req),
          }) as never;
        }
      },
    });
  }
}
