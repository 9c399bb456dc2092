/**
 * The protos the gRPC transport serves: Permify's `base.v1`, health and reflection, and every file they import.
 * `typeRegistry` resolves `google.protobuf.Any` attribute values (`base.v1.BooleanValue`, ...) in JSON; reflection
 * answers with the files themselves.
 */
import { createRegistry, type DescFile } from "@bufbuild/protobuf";
import { file_base_v1_service } from "./gen/base/v1/service_pb.js";
import { file_grpc_health_v1_health } from "./gen/grpc/health/v1/health_pb.js";
import { file_grpc_reflection_v1_reflection } from "./gen/grpc/reflection/v1/reflection_pb.js";
import { file_grpc_reflection_v1alpha_reflection } from "./gen/grpc/reflection/v1alpha/reflection_pb.js";

const ROOTS = [
  file_base_v1_service,
  file_grpc_health_v1_health,
  file_grpc_reflection_v1_reflection,
  file_grpc_reflection_v1alpha_reflection,
];

/** Every file by name: the roots and their imports, transitively. */
export const FILES: ReadonlyMap<string, DescFile> = (() => {
  const files = new Map<string, DescFile>();
  const add = (file: DescFile): void => {
    if (files.has(file.proto.name)) return;
    files.set(file.proto.name, file);
    for (const dep of file.dependencies) add(dep);
  };
  for (const root of ROOTS) add(root);
  return files;
})();

export const typeRegistry = createRegistry(...FILES.values());
