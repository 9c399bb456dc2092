import { getOption, hasOption } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { http } from "./gen/google/api/annotations_pb.js";
import { RPC_ROUTES } from "./rpc-table.ts";

describe("the RPC table", () => {
  it("maps all 25 base.v1 RPCs, two of them server streams", () => {
    expect(RPC_ROUTES).toHaveLength(25);
    expect(
      RPC_ROUTES.filter((r) => r.method.methodKind === "server_streaming").map((r) => r.method.name),
    ).toEqual(["LookupEntityStream", "Watch"]);
    expect(new Set(RPC_ROUTES.map((r) => r.route)).size).toBe(25);
  });

  it("each RPC is served by the route its proto's google.api.http option names (Watch has none)", () => {
    for (const { method, route } of RPC_ROUTES) {
      if (!hasOption(method, http)) {
        expect(method.name).toBe("Watch");
        continue;
      }
      const rule = getOption(method, http);
      const { pattern } = rule;
      expect(pattern.case?.toUpperCase(), method.name).toBe(route.method);
      expect(pattern.value, method.name).toBe(route.path);
      expect(rule.body, method.name).toBe(route.method === "DELETE" ? "" : "*");
    }
  });
});
