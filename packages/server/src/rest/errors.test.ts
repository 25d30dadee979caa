import { create, type DescService } from "@bufbuild/protobuf";
import {
  BillingService,
  CertificateService,
  GetBillingResponseSchema,
  SubscribeWorkspaceEventsResponseSchema,
  UpdateCertificateAuthorityResponseSchema,
  WorkspaceService,
} from "@wap/api";
import { errorCodes } from "@wap/core";
import { httpStatusOfCode } from "@wap/core/internal";
import { describe, expect, it } from "vitest";
import { httpStatusOf, restErrorBody, rpcCodeOf, writeResponse } from "./index.js";

describe("httpStatusOf", () => {
  it("answers each of the 16 codes with the status the core documents (docs/errors.md)", () => {
    expect(errorCodes).toHaveLength(16);
    for (const code of errorCodes) expect(httpStatusOf(code), code).toBe(httpStatusOfCode[code]);
  });
});

describe("restErrorBody", () => {
  it("is a google.rpc.Status with the numeric google.rpc.Code", () => {
    expect(restErrorBody("unauthenticated", "sign in")).toEqual({
      code: 16,
      message: "sign in",
      details: [],
    });
    expect(restErrorBody("permission_denied", "no").code).toBe(7);
    expect(restErrorBody("invalid_argument", "bad").code).toBe(3);
    expect(restErrorBody("not_found", "gone").code).toBe(5);
    // google.rpc.Code follows the Connect code order: canceled = 1 ... unauthenticated = 16.
    for (const [i, code] of errorCodes.entries()) expect(rpcCodeOf(code)).toBe(i + 1);
  });

  it("carries details as JSON Any values", () => {
    const detail = { "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "CA_NAME_TAKEN" };
    const body = restErrorBody("already_exists", "taken", [detail]);
    expect(JSON.parse(JSON.stringify(body))).toEqual({ code: 6, message: "taken", details: [detail] });
  });
});

describe("writeResponse", () => {
  const method = (service: DescService, name: string) => service.methods.find((m) => m.name === name)!;

  it("writes canonical JSON: int64 as strings, unset fields omitted", () => {
    const getBilling = method(BillingService, "GetBilling");
    expect(writeResponse(getBilling, create(GetBillingResponseSchema, {}))).toBe("{}");
    const msg = create(GetBillingResponseSchema, {
      billingEnabled: false,
      counts: { members: 3n, teams: 0n },
      currentPeriodEnd: { seconds: 1_767_225_600n, nanos: 0 },
    });
    expect(JSON.parse(writeResponse(getBilling, msg))).toEqual({
      // Set to false: explicit presence keeps it.
      billingEnabled: false,
      counts: { members: "3", teams: "0" },
      currentPeriodEnd: "2026-01-01T00:00:00Z",
    });
  });

  it("honours the payload json_name override", () => {
    const subscribe = method(WorkspaceService, "SubscribeWorkspaceEvents");
    const msg = create(SubscribeWorkspaceEventsResponseSchema, { payloadJson: '{"a":1}' });
    expect(JSON.parse(writeResponse(subscribe, msg))).toEqual({ payload: '{"a":1}' });
  });

  it("refuses a message of another type", () => {
    const update = method(CertificateService, "UpdateCertificateAuthority");
    expect(() => writeResponse(update, create(GetBillingResponseSchema, {}))).toThrow(TypeError);
    expect(writeResponse(update, create(UpdateCertificateAuthorityResponseSchema, {}))).toBe("{}");
  });
});
