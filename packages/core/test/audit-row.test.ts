/** The audit row every flow writes: the facts given, the request they came from, a fresh id. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { auditRow, noRequest } from "../src/audit/record.js";

describe("auditRow", () => {
  it("copies the facts and the request, defaults the status to ok and draws a fresh id", () => {
    let n = 0;
    const services = { random: { uuid: () => `id-${++n}` } } as never;
    const at = new Date("2026-01-02T03:04:05Z");
    const facts = {
      workspaceId: "w1",
      actorType: "user",
      actorId: "u1",
      action: "target.create",
      resource: "target:t1",
      at,
    } as const;
    const request = { ipAddress: "203.0.113.9", userAgent: "ua", requestId: "r1" };
    expect(auditRow(services, request, facts)).toEqual({
      id: "id-1",
      workspaceId: "w1",
      actorType: "user",
      actorId: "u1",
      action: "target.create",
      resource: "target:t1",
      ipAddress: "203.0.113.9",
      userAgent: "ua",
      statusCode: "ok",
      requestId: "r1",
      timestamp: at,
    });
    const refused = auditRow(services, noRequest, {
      ...facts,
      workspaceId: null,
      statusCode: "permission_denied",
    });
    expect(refused).toMatchObject({
      id: "id-2",
      workspaceId: null,
      statusCode: "permission_denied",
      ipAddress: "",
      requestId: "",
    });
  });

  it("keeps any status and resource as given", () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (statusCode, resource) => {
        const row = auditRow({ random: { uuid: () => "x" } } as never, noRequest, {
          workspaceId: null,
          actorType: "system",
          actorId: "",
          action: "target.create",
          resource,
          at: new Date(0),
          statusCode,
        });
        return row.statusCode === statusCode && row.resource === resource;
      }),
    );
  });
});
