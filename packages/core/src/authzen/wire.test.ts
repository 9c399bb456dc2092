import { describe, expect, it } from "vitest";
import { PembaError } from "../errors.ts";
import { AccessEvaluationRequestSchema, readEvaluationRequest } from "./wire.ts";

const alice = { type: "user", id: "alice" };
const doc = { type: "document", id: "1" };

describe("readEvaluationRequest: the fast read gives what zod gives", () => {
  it.each([
    ["minimal", { subject: alice, action: { name: "read" }, resource: doc }],
    [
      "properties and context",
      {
        subject: { ...alice, properties: { role: "admin", n: [1, 2] } },
        action: { name: "delete", properties: { soft: true } },
        resource: { ...doc, properties: { status: { nested: null } } },
        context: { time: "1985-10-26T01:22-07:00" },
      },
    ],
    [
      "unknown fields everywhere are dropped",
      {
        subject: { ...alice, extra: 1 },
        action: { name: "read", x: [] },
        resource: { ...doc, y: "z" },
        foo: "bar",
        futureField: { nested: true },
      },
    ],
  ])("%s", (_, body) => {
    expect(readEvaluationRequest(body)).toEqual(AccessEvaluationRequestSchema.parse(body));
  });

  it.each([
    ["missing subject", { action: { name: "read" }, resource: doc }, "subject: required object"],
    [
      "subject without id",
      { subject: { type: "user" }, action: { name: "read" }, resource: doc },
      "subject.id",
    ],
    ["action.name a number", { subject: alice, action: { name: 123 }, resource: doc }, "action.name"],
    [
      "properties an array",
      { subject: { ...alice, properties: [] }, action: { name: "r" }, resource: doc },
      "subject.properties",
    ],
    ["context a string", { subject: alice, action: { name: "r" }, resource: doc, context: "x" }, "context"],
  ])("%s: zod's 400 naming the field", (_, body, field) => {
    let error: unknown;
    try {
      readEvaluationRequest(body as Record<string, unknown>);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(PembaError);
    expect((error as PembaError).httpStatus).toBe(400);
    expect((error as PembaError).message).toContain(`invalid AccessEvaluationRequest: ${field}`);
  });
});
