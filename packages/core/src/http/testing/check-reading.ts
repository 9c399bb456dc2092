/**
 * Test support for the check request's fast readers (the JSON body scanner, the gRPC message decoder): the load
 * test's check request, and what the general path (zod, the one definition of a valid request) reads from a request,
 * in the form the fast readers give it.
 */
import type { z } from "@hono/zod-openapi";
import type { PermissionCheckRequestSchema } from "../../wire/permission.ts";
import type { ScannedCheck } from "../check-body-scanner.ts";

/** The check request the load test sends, in Permify's JSON (proto field names). */
export const K6_CHECK = {
  metadata: { snap_token: "", schema_version: "d4d7lm8rqiks73cl7nkg", depth: 20 },
  entity: { type: "content", id: "4711" },
  permission: "view",
  subject: { type: "user", id: "99999" },
};

/** A check request as zod reads it -> its metadata and question, as a fast reader gives them. */
export function checkReading(r: z.output<typeof PermissionCheckRequestSchema>): ScannedCheck {
  return {
    meta: {
      schemaVersion: r.metadata.schema_version,
      snapToken: r.metadata.snap_token,
      depth: r.metadata.depth,
    },
    query: {
      entity: { type: r.entity.type, id: r.entity.id },
      permission: r.permission,
      subject: { type: r.subject.type, id: r.subject.id, relation: r.subject.relation },
    },
  };
}
