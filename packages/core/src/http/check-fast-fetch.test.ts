import { describe, expect, it } from "vitest";
import { checkPathTenant } from "./check-fast-fetch.ts";

describe("check fast path URL matching", () => {
  it("takes the tenant of POST /v1/tenants/<t>/permissions/check", () => {
    expect(checkPathTenant("http://127.0.0.1:3476/v1/tenants/t1/permissions/check")).toBe("t1");
    expect(checkPathTenant("https://h/v1/tenants/a.b@c:d/permissions/check?x=1")).toBe("a.b@c:d");
    expect(checkPathTenant("http://h/v1/tenants/a%40b/permissions/check")).toBe("a@b");
  });

  it("leaves every other URL to the router", () => {
    for (const url of [
      "http://h/v1/tenants//permissions/check",
      "http://h/v1/tenants/t1/permissions/check/",
      "http://h/v1/tenants/t1/permissions/bulk-check",
      "http://h/v1/tenants/a/b/permissions/check",
      "http://h/v2/tenants/t1/permissions/check",
      "http://h/v1/tenants/%E0%A4%A/permissions/check",
    ]) {
      expect(checkPathTenant(url)).toBeUndefined();
    }
  });
});
