import { describe, expect, it } from "vitest";
import { type CsrfFacts, checkCsrf, isCsrfExempt, normalizeOrigins } from "./csrf.js";

const base: CsrfFacts = {
  method: "POST",
  ownOrigin: "http://127.0.0.1:8080",
  origin: undefined,
  secFetchSite: undefined,
  contentType: "application/json",
  hasConnectProtocolVersion: false,
};
const allowed = normalizeOrigins(["https://App.example.com/"]);

describe("checkCsrf", () => {
  it("lets safe methods through", () => {
    expect(checkCsrf({ ...base, method: "GET", origin: "https://evil.example" }, allowed)).toBeUndefined();
  });

  it("checks Origin against our own origin and the allowed ones", () => {
    expect(checkCsrf({ ...base, origin: "http://127.0.0.1:8080" }, allowed)).toBeUndefined();
    expect(checkCsrf({ ...base, origin: "https://app.example.com" }, allowed)).toBeUndefined();
    expect(checkCsrf({ ...base, origin: "https://evil.example" }, allowed)?.code).toBe("permission_denied");
    expect(checkCsrf({ ...base, origin: "null" }, allowed)?.reason).toBe("CSRF_CHECK_FAILED");
  });

  it("falls back to Sec-Fetch-Site", () => {
    expect(checkCsrf({ ...base, secFetchSite: "same-origin" }, allowed)).toBeUndefined();
    expect(checkCsrf({ ...base, secFetchSite: "cross-site" }, allowed)).toBeDefined();
    expect(checkCsrf({ ...base, secFetchSite: "same-site" }, allowed)).toBeDefined();
  });

  it("requires a request a foreign page cannot send without a preflight", () => {
    for (const contentType of [
      "text/plain",
      "application/x-www-form-urlencoded",
      "multipart/form-data",
      undefined,
    ]) {
      expect(checkCsrf({ ...base, contentType }, allowed)).toBeDefined();
    }
    expect(
      checkCsrf({ ...base, contentType: undefined, hasConnectProtocolVersion: true }, allowed),
    ).toBeUndefined();
    for (const contentType of [
      "application/json; charset=utf-8",
      "application/proto",
      "application/grpc-web+proto",
    ]) {
      expect(checkCsrf({ ...base, contentType }, allowed)).toBeUndefined();
    }
  });
});

describe("isCsrfExempt", () => {
  it("exempts only the POSTs of the SAML ACS and the billing webhook", () => {
    const ws = "0b9c6a52-57c4-4f4e-9f3e-0a1b2c3d4e5f";
    expect(isCsrfExempt("POST", `/v1/sso/saml/${ws}/acs`)).toBe(true);
    expect(isCsrfExempt("POST", "/v1/billing/webhook")).toBe(true);
    for (const [method, path] of [
      ["PATCH", `/v1/sso/saml/${ws}/acs`],
      ["POST", `/v1/sso/saml/${ws}/acs/x`],
      ["POST", `/v1/sso/saml/${ws}/metadata`],
      ["POST", "/v1/sso/oidc/callback"],
      ["POST", "/v1/billing/checkout"],
      ["POST", "/v1/billing/webhook/"],
      ["POST", "/v1/workspaces"],
    ] as const) {
      expect(isCsrfExempt(method, path), `${method} ${path}`).toBe(false);
    }
  });
});
