import { describe, expect, it } from "vitest";
import type { PembaError } from "../errors.ts";
import { renderBundleTemplate } from "./bundle-template.ts";

describe("bundle templates", () => {
  it("substitute {{.name}} and {{ .name }}", () => {
    expect(
      renderBundleTemplate("organization:{{.organizationID}}#admin@user:{{ .creatorID }}", {
        organizationID: "789",
        creatorID: "564",
      }),
    ).toBe("organization:789#admin@user:564");
  });

  it("leave text without actions alone", () => {
    expect(renderBundleTemplate("user:1#self@user:1", {})).toBe("user:1#self@user:1");
  });

  it("refuse a missing argument with ERROR_CODE_MISSING_ARGUMENT (400)", () => {
    try {
      renderBundleTemplate("org:{{.orgID}}#admin@user:1", {});
      expect.unreachable();
    } catch (e) {
      expect((e as PembaError).toJSON()).toEqual({
        code: 3,
        message: "ERROR_CODE_MISSING_ARGUMENT",
        details: [],
      });
      expect((e as PembaError).httpStatus).toBe(400);
    }
  });
});
