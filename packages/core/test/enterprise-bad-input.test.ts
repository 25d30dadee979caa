/**
 * Every validation bound of the SSO, billing and audit messages,
 * through the operations, on both sides of each bound. Lengths count code points.
 */
import type { DescMessage, DescMethodUnary, MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { BillingService, SSOService, UtilService } from "@wap/api";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Caller } from "../src/context.js";
import { ofLength, violatedFieldsOf } from "./support/bounds.js";
import { createTestPlatform, type TestPlatform } from "./support.js";

let t: TestPlatform;
let owner: Caller;
let workspaceId: string;
beforeAll(async () => {
  t = await createTestPlatform();
  const o = await t.owner();
  owner = o.caller;
  workspaceId = o.workspaceId;
});
afterAll(() => t.platform.close());

const violatedFields = violatedFieldsOf(() => t);
/** The fields a validation error names; [] when the call passed validation (whatever came next). */
const violations = <I extends DescMessage, O extends DescMessage>(
  method: DescMethodUnary<I, O>,
  request: MessageInitShape<I>,
  caller: Caller = owner,
) => violatedFields(caller, method, request);

const oidcBase = () => ({
  workspaceId,
  name: "IdP",
  issuerUrl: "https://idp.example",
  clientId: "client",
  clientSecret: "secret",
  scopes: ["openid"],
});
const samlBase = () => ({ workspaceId, name: "IdP", metadataUrl: "https://idp.example/metadata" });

interface LengthRule {
  readonly name: string;
  // biome-ignore lint/suspicious/noExplicitAny: one table for methods of every shape.
  readonly method: DescMethodUnary<any, any>;
  readonly field: string;
  readonly min: number;
  readonly max: number;
  readonly request: (value: string) => Record<string, unknown>;
  readonly caller?: () => Caller;
}

const lengthRules: LengthRule[] = [
  {
    name: "UpdateOIDCProvider.name",
    method: SSOService.method.updateOIDCProvider,
    field: "name",
    min: 1,
    max: 256,
    request: (name) => ({ ...oidcBase(), name }),
  },
  {
    name: "UpdateOIDCProvider.clientId",
    method: SSOService.method.updateOIDCProvider,
    field: "clientId",
    min: 1,
    max: 500,
    request: (clientId) => ({ ...oidcBase(), clientId }),
  },
  {
    name: "UpdateOIDCProvider.clientSecret",
    method: SSOService.method.updateOIDCProvider,
    field: "clientSecret",
    min: 1,
    max: 1000,
    request: (clientSecret) => ({ ...oidcBase(), clientSecret }),
  },
  {
    name: "UpdateOIDCProvider.scopes[i]",
    method: SSOService.method.updateOIDCProvider,
    field: "scopes.1",
    min: 1,
    max: 100,
    request: (scope) => ({ ...oidcBase(), scopes: ["openid", scope] }),
  },
  {
    name: "UpdateOIDCProvider.emailClaim (server limit)",
    method: SSOService.method.updateOIDCProvider,
    field: "emailClaim",
    min: 0,
    max: 256,
    request: (emailClaim) => ({ ...oidcBase(), emailClaim }),
  },
  {
    name: "UpdateSAMLProvider.name",
    method: SSOService.method.updateSAMLProvider,
    field: "name",
    min: 1,
    max: 256,
    request: (name) => ({ ...samlBase(), name }),
  },
  {
    name: "UpdateSAMLProvider.emailAttribute (server limit)",
    method: SSOService.method.updateSAMLProvider,
    field: "emailAttribute",
    min: 0,
    max: 256,
    request: (emailAttribute) => ({ ...samlBase(), emailAttribute }),
  },
  {
    name: "CancelSubscription.reason",
    method: BillingService.method.cancelSubscription,
    field: "reason",
    min: 0,
    max: 1000,
    request: (reason) => ({ workspaceId, reason }),
  },
  {
    name: "ListAuditLogs.search (server limit)",
    method: UtilService.method.listAuditLogs,
    field: "search",
    min: 0,
    max: 256,
    request: (search) => ({ workspaceId, search }),
  },
  {
    name: "ListAuditLogs.actions[i] (server limit)",
    method: UtilService.method.listAuditLogs,
    field: "actions.0",
    min: 0,
    max: 256,
    request: (action) => ({ workspaceId, actions: [action] }),
  },
];

describe("length bounds, both sides", () => {
  for (const rule of lengthRules) {
    it(`${rule.name}: ${rule.min} to ${rule.max} characters`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: rule.min, max: rule.max }), fc.nat(), async (length, seed) => {
          const value = fc.sample(ofLength(length), { seed, numRuns: 1 })[0]!;
          expect(await violations(rule.method, rule.request(value) as never)).not.toContain(rule.field);
        }),
        { numRuns: 12 },
      );
      for (const length of [rule.min, rule.max]) {
        expect(await violations(rule.method, rule.request("😀".repeat(length)) as never)).not.toContain(
          rule.field,
        );
      }
      if (rule.min > 0) {
        expect(await violations(rule.method, rule.request("😀".repeat(rule.min - 1)) as never)).toContain(
          rule.field,
        );
      }
      expect(await violations(rule.method, rule.request("a".repeat(rule.max + 1)) as never)).toContain(
        rule.field,
      );
      expect(await violations(rule.method, rule.request("😀".repeat(rule.max + 1)) as never)).toContain(
        rule.field,
      );
    });
  }
});

describe("list sizes", () => {
  it("UpdateOIDCProvider.scopes: 1 to 20 items on every call", async () => {
    const scopes = (n: number) => ["openid", ...Array.from({ length: n - 1 }, (_, i) => `s${i}`)];
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 20 }), async (n) => {
        expect(
          await violations(SSOService.method.updateOIDCProvider, { ...oidcBase(), scopes: scopes(n) }),
        ).toEqual([]);
      }),
      { numRuns: 10 },
    );
    expect(await violations(SSOService.method.updateOIDCProvider, { ...oidcBase(), scopes: [] })).toContain(
      "scopes",
    );
    expect(
      await violations(SSOService.method.updateOIDCProvider, { ...oidcBase(), scopes: scopes(21) }),
    ).toContain("scopes");
    // Updating one flag still has to send the scopes.
    expect(
      await violations(SSOService.method.updateOIDCProvider, { workspaceId, enforceSso: false }),
    ).toContain("scopes");
  });

  it("ListAuditLogs.actorIds, actorTypes, actions: at most 100 items (server limit)", async () => {
    for (const field of ["actorIds", "actorTypes", "actions"] as const) {
      const item = () => (field === "actorIds" ? crypto.randomUUID() : "x");
      const list = (n: number) => Array.from({ length: n }, item);
      expect(await violations(UtilService.method.listAuditLogs, { workspaceId, [field]: list(100) })).toEqual(
        [],
      );
      expect(
        await violations(UtilService.method.listAuditLogs, { workspaceId, [field]: list(101) }),
      ).toContain(field);
    }
  });
});

describe("formats", () => {
  const uriRules: ReadonlyArray<Pick<LengthRule, "method" | "field" | "request">> = [
    {
      method: SSOService.method.updateOIDCProvider,
      field: "issuerUrl",
      request: (v: string) => ({ ...oidcBase(), issuerUrl: v }),
    },
    {
      method: SSOService.method.updateSAMLProvider,
      field: "metadataUrl",
      request: (v: string) => ({ ...samlBase(), metadataUrl: v }),
    },
  ];

  it("issuerUrl and metadataUrl: absolute URIs (RFC 3986, with a scheme)", async () => {
    const segment = fc.stringMatching(/^[a-z0-9._~-]{1,12}$/);
    const goodUrl = fc
      .tuple(fc.constantFrom("https", "http"), segment, fc.array(segment, { maxLength: 3 }))
      .map(([scheme, host, path]) => `${scheme}://${host}.example/${path.join("/")}`);
    for (const rule of uriRules) {
      await fc.assert(
        fc.asyncProperty(goodUrl, async (url) => {
          expect(await violations(rule.method, rule.request(url) as never)).toEqual([]);
        }),
        { numRuns: 10 },
      );
      for (const bad of [
        "",
        "idp.example",
        "//idp.example/x",
        "1http://x",
        "https://a b",
        "https://x/%zz",
        "https://x/<y>",
      ]) {
        expect(await violations(rule.method, rule.request(bad) as never), bad).toContain(rule.field);
      }
      // Absolute URIs, but not something a server can fetch: refused by the operation.
      expect(await violations(rule.method, rule.request("urn:example:idp") as never)).toContain(rule.field);
    }
  });

  it("CheckSSO.email: an email address of at most 256 characters", async () => {
    const check = (email: string) => violations(SSOService.method.checkSSO, { email }, { kind: "anonymous" });
    const local = (n: number) => "a".repeat(n);
    const at256 = `${local(256 - "@example.com".length)}@example.com`;
    expect(await check(at256)).toEqual([]);
    expect(await check(`a${at256}`)).toContain("email");
    for (const bad of ["", "plain", "a@", "@b.example", "a b@c.example", "a@-b.example"]) {
      expect(await check(bad), bad).toContain("email");
    }
  });

  it("ExportAuditLogs.format: defined values only; ListAuditLogs paging and uuid actor ids", async () => {
    for (const format of [0, 1, 2]) {
      expect(await violations(UtilService.method.exportAuditLogs, { workspaceId, format })).toEqual([]);
    }
    for (const format of [3, -1, 99]) {
      expect(await violations(UtilService.method.exportAuditLogs, { workspaceId, format })).toContain(
        "format",
      );
    }
    const list = (request: Record<string, unknown>) =>
      violations(UtilService.method.listAuditLogs, { workspaceId, ...request });
    expect(await list({ limit: 1, offset: 0 })).toEqual([]);
    expect(await list({ limit: 100 })).toEqual([]);
    expect(await list({ limit: 0 })).toContain("limit");
    expect(await list({ limit: 101 })).toContain("limit");
    expect(await list({ offset: -1 })).toContain("offset");
    expect(await list({ actorIds: ["not-a-uuid"] })).toContain("actorIds.0");
    const [start, end] = [new Date("2026-01-02T00:00:00Z"), new Date("2026-01-01T00:00:00Z")];
    expect(await list({ startDate: timestampFromDate(start), endDate: timestampFromDate(end) })).toContain(
      "endDate",
    );
    expect(await list({ startDate: timestampFromDate(end), endDate: timestampFromDate(end) })).toEqual([]);
  });

  it("workspaceId: a uuid on every workspace-scoped call", async () => {
    const bad = { workspaceId: "not-a-uuid" };
    for (const method of [
      SSOService.method.getOIDCProvider,
      SSOService.method.getSAMLProvider,
      BillingService.method.getBilling,
      BillingService.method.createCheckout,
      BillingService.method.createPortal,
      UtilService.method.listAuditLogs,
      UtilService.method.exportAuditLogs,
    ]) {
      expect(await violations(method as DescMethodUnary<DescMessage, DescMessage>, bad as never)).toContain(
        "workspaceId",
      );
    }
  });
});
