/**
 * Errors are values with Permify's codes. `code` is the Permify `ERROR_CODE_*` name (or a free-text category for
 * parser/CEL errors); `grpcCode` is the gRPC status number that Permify's gateway reports for it, and
 * `httpStatus` the HTTP status grpc-gateway maps that to.
 */
export type ErrorCode =
  | "ERROR_CODE_MISSING_BEARER_TOKEN"
  | "ERROR_CODE_UNAUTHENTICATED"
  | "ERROR_CODE_INVALID_KEY"
  | "ERROR_CODE_INVALID_BEARER_TOKEN"
  | "ERROR_CODE_INVALID_CLAIMS"
  | "ERROR_CODE_INVALID_ISSUER"
  | "ERROR_CODE_INVALID_AUDIENCE"
  | "ERROR_CODE_MISSING_TENANT_ID"
  | "ERROR_CODE_VALIDATION"
  | "ERROR_CODE_INVALID_ARGUMENT"
  | "ERROR_CODE_DEPTH_NOT_ENOUGH"
  | "ERROR_CODE_ENTITY_AND_SUBJECT_CANNOT_BE_EQUAL"
  | "ERROR_CODE_SCHEMA_PARSE"
  | "ERROR_CODE_SCHEMA_COMPILE"
  | "ERROR_CODE_MISSING_ARGUMENT"
  | "ERROR_CODE_ALREADY_EXIST"
  | "ERROR_CODE_INVALID_CONTINUOUS_TOKEN"
  | "ERROR_CODE_INVALID_SNAP_TOKEN"
  | "ERROR_CODE_SNAP_TOKEN_EXPIRED"
  | "ERROR_CODE_MAX_DATA_PER_WRITE_EXCEEDED"
  | "ERROR_CODE_PAGE_SIZE_EXCEEDED"
  | "ERROR_CODE_REQUEST_TOO_LARGE"
  | "ERROR_CODE_NOT_FOUND"
  | "ERROR_CODE_SCHEMA_NOT_FOUND"
  | "ERROR_CODE_ENTITY_TYPE_REQUIRED"
  | "ERROR_CODE_ENTITY_DEFINITION_NOT_FOUND"
  | "ERROR_CODE_PERMISSION_NOT_FOUND"
  | "ERROR_CODE_RELATION_DEFINITION_NOT_FOUND"
  | "ERROR_CODE_ATTRIBUTE_DEFINITION_NOT_FOUND"
  | "ERROR_CODE_SUBJECT_TYPE_NOT_FOUND"
  | "ERROR_CODE_ATTRIBUTE_TYPE_MISMATCH"
  | "ERROR_CODE_RULE_DEFINITION_NOT_FOUND"
  | "ERROR_CODE_BUNDLE_NOT_FOUND"
  | "ERROR_CODE_TENANT_NOT_FOUND"
  | "ERROR_CODE_ENTITY_STATEMENT_NOT_FOUND"
  | "ERROR_CODE_REFERENCE_NOT_FOUND"
  | "ERROR_CODE_PERMISSION_DENIED"
  | "ERROR_CODE_INTERNAL"
  | "ERROR_CODE_CANCELLED"
  | "ERROR_CODE_SQL_EXECUTION"
  | "ERROR_CODE_EXECUTION"
  | "ERROR_CODE_NOT_IMPLEMENTED"
  | "ERROR_CODE_SERIALIZATION"
  | "ERROR_CODE_RATE_LIMITED";

/** Permify's numeric ErrorCode values (proto/base/v1/errors.proto); they decide the gRPC code. */
const ERROR_NUMBERS: Record<ErrorCode, number> = {
  ERROR_CODE_UNAUTHENTICATED: 1001,
  ERROR_CODE_MISSING_BEARER_TOKEN: 1002,
  ERROR_CODE_INVALID_BEARER_TOKEN: 1003,
  ERROR_CODE_INVALID_KEY: 1004,
  ERROR_CODE_INVALID_CLAIMS: 1005,
  ERROR_CODE_INVALID_ISSUER: 1006,
  ERROR_CODE_INVALID_AUDIENCE: 1007,
  ERROR_CODE_MISSING_TENANT_ID: 2001,
  ERROR_CODE_VALIDATION: 2002,
  ERROR_CODE_INVALID_ARGUMENT: 2003,
  ERROR_CODE_DEPTH_NOT_ENOUGH: 2004,
  ERROR_CODE_ENTITY_AND_SUBJECT_CANNOT_BE_EQUAL: 2005,
  ERROR_CODE_SCHEMA_PARSE: 2006,
  ERROR_CODE_SCHEMA_COMPILE: 2007,
  ERROR_CODE_MISSING_ARGUMENT: 2008,
  ERROR_CODE_ALREADY_EXIST: 2009,
  ERROR_CODE_INVALID_CONTINUOUS_TOKEN: 2010,
  ERROR_CODE_INVALID_SNAP_TOKEN: 2011,
  ERROR_CODE_SNAP_TOKEN_EXPIRED: 2012,
  ERROR_CODE_MAX_DATA_PER_WRITE_EXCEEDED: 2013,
  ERROR_CODE_PAGE_SIZE_EXCEEDED: 2014,
  ERROR_CODE_REQUEST_TOO_LARGE: 2015,
  ERROR_CODE_NOT_FOUND: 4000,
  ERROR_CODE_SCHEMA_NOT_FOUND: 4001,
  ERROR_CODE_ENTITY_TYPE_REQUIRED: 4002,
  ERROR_CODE_ENTITY_DEFINITION_NOT_FOUND: 4003,
  ERROR_CODE_PERMISSION_NOT_FOUND: 4004,
  ERROR_CODE_RELATION_DEFINITION_NOT_FOUND: 4005,
  ERROR_CODE_ATTRIBUTE_DEFINITION_NOT_FOUND: 4006,
  ERROR_CODE_SUBJECT_TYPE_NOT_FOUND: 4007,
  ERROR_CODE_ATTRIBUTE_TYPE_MISMATCH: 4008,
  ERROR_CODE_RULE_DEFINITION_NOT_FOUND: 4009,
  ERROR_CODE_BUNDLE_NOT_FOUND: 4010,
  ERROR_CODE_TENANT_NOT_FOUND: 4011,
  ERROR_CODE_ENTITY_STATEMENT_NOT_FOUND: 4012,
  ERROR_CODE_REFERENCE_NOT_FOUND: 4013,
  ERROR_CODE_PERMISSION_DENIED: 1008,
  ERROR_CODE_INTERNAL: 5000,
  ERROR_CODE_CANCELLED: 5001,
  ERROR_CODE_SQL_EXECUTION: 5002,
  ERROR_CODE_EXECUTION: 5003,
  ERROR_CODE_NOT_IMPLEMENTED: 5012,
  ERROR_CODE_SERIALIZATION: 5019,
  ERROR_CODE_RATE_LIMITED: 5020,
};

/** gRPC status code for a Permify error code (internal/servers/error.go). */
export function grpcCodeFor(code: ErrorCode): number {
  if (code === "ERROR_CODE_RATE_LIMITED") return 8;
  const n = ERROR_NUMBERS[code];
  if (n === 5001) return 1;
  if (n === 5012) return 12;
  if (n === 5019) return 10;
  if (n >= 1000 && n < 2000) return 16;
  if (n >= 2000 && n < 3000) return 3;
  if (n >= 4000 && n < 5000) return 5;
  return 13;
}

/** grpc-gateway's gRPC code -> HTTP status mapping. */
export function httpStatusForGrpc(grpc: number): number {
  const map: Record<number, number> = {
    0: 200,
    1: 499,
    2: 500,
    3: 400,
    4: 504,
    5: 404,
    6: 409,
    7: 403,
    8: 429,
    9: 400,
    10: 409,
    11: 400,
    12: 501,
    13: 500,
    14: 503,
    15: 500,
    16: 401,
  };
  return map[grpc] ?? 500;
}

/**
 * The one error type of Pemba. `message` is what goes on the wire: the code name for engine errors (Permify's
 * behaviour) or positional text for parser/compiler/CEL errors. `grpcCode` can be overridden for the cases where
 * Permify reports a different status (schema compile errors are gRPC 13; a missing bearer token is gRPC 2).
 */
export class PembaError extends Error {
  readonly code: ErrorCode;
  readonly grpcCode: number;
  readonly details: unknown[];
  constructor(code: ErrorCode, message?: string, opts: { grpcCode?: number; details?: unknown[] } = {}) {
    super(message ?? code);
    this.name = "PembaError";
    this.code = code;
    this.grpcCode = opts.grpcCode ?? grpcCodeFor(code);
    this.details = opts.details ?? [];
  }
  get httpStatus(): number {
    return httpStatusForGrpc(this.grpcCode);
  }
  toJSON(): { code: number; message: string; details: unknown[] } {
    return { code: this.grpcCode, message: this.message, details: this.details };
  }
}

export function isPembaError(e: unknown): e is PembaError {
  return e instanceof PembaError;
}
