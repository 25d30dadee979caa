/**
 * The edge decides how to treat a request's credentials from the declared access of the operation
 * it calls (Platform.accessOf), never from its name: these calls name procedures no contract has.
 */
import type { DescMethod } from "@bufbuild/protobuf";
import { type Platform, UnauthenticatedError } from "@wap/core";
import type { Access, Credentials } from "@wap/core/internal";
import { describe, expect, it } from "vitest";
import { admitRequest, callerFor, type EdgeSettings } from "./edge.js";
import { createJsonLogger } from "./logger.js";
import { unlimited } from "./rate-limit.js";

const declared: Record<string, Access> = {
  "/test.v1.Fake/Unchecked": { kind: "public", signature: "unchecked" },
  "/test.v1.Fake/Optional": { kind: "public", signature: "optional" },
  "/test.v1.Fake/Public": { kind: "public" },
  "/test.v1.Fake/SignsIn": { kind: "public", signsIn: true },
};

function settingsWith(authenticated: Credentials[]): EdgeSettings {
  const platform = {
    accessOf: (procedure: string) => declared[procedure],
    async authenticate(credentials: Credentials) {
      authenticated.push(credentials);
      throw new UnauthenticatedError("the signature does not verify");
    },
  } as unknown as Platform;
  return {
    platform,
    rateLimiters: { anonymous: unlimited, authenticated: unlimited },
    trustedProxyHops: 0,
    allowedOrigins: new Set(),
    secure: false,
    logger: createJsonLogger("silent"),
  };
}

const methodAt = (procedure: string) => {
  const [, service, name] = procedure.split("/");
  return { parent: { typeName: service }, name } as unknown as DescMethod;
};

async function admit(procedure: string, headers: Record<string, string>, authenticated: Credentials[] = []) {
  const settings = settingsWith(authenticated);
  const edge = await admitRequest(
    { method: "POST", url: procedure, headers: { host: "wap.test", ...headers }, socket: {} },
    { setHeader: () => undefined },
    settings,
  );
  return { edge, settings };
}

describe("the edge, by declared access", () => {
  it("does not verify a Platform challenge where the operation declares it unchecked", async () => {
    const authenticated: Credentials[] = [];
    const { edge, settings } = await admit(
      "/test.v1.Fake/Unchecked",
      { authorization: "Platform whatever" },
      authenticated,
    );
    expect(authenticated).toEqual([]);
    expect(callerFor(edge, settings, methodAt("/test.v1.Fake/Unchecked")).kind).toBe("anonymous");
  });

  it("runs a call as anonymous when a challenge fails only where the operation declares it optional", async () => {
    for (const [procedure, outcome] of [
      ["/test.v1.Fake/Optional", "anonymous"],
      ["/test.v1.Fake/Public", "refused"],
    ] as const) {
      const authenticated: Credentials[] = [];
      const { edge, settings } = await admit(
        procedure,
        { authorization: "Platform whatever" },
        authenticated,
      );
      expect(authenticated).toHaveLength(1);
      const run = () => callerFor(edge, settings, methodAt(procedure)).kind;
      if (outcome === "anonymous") expect(run()).toBe("anonymous");
      else expect(run).toThrow("the signature does not verify");
    }
  });

  it("refuses a call from another site's page only where the operation declares it signs in", async () => {
    const foreign = { origin: "https://evil.example", "sec-fetch-site": "cross-site" };
    expect((await admit("/test.v1.Fake/SignsIn", foreign)).edge.refusal?.reason).toBe("CSRF_CHECK_FAILED");
    expect((await admit("/test.v1.Fake/Public", foreign)).edge.refusal).toBeUndefined();
  });
});
