/**
 * SSOService settings: UpdateOIDCProvider / GetOIDCProvider, UpdateSAMLProvider /
 * GetSAMLProvider (upserts, omitted fields unchanged, the write-only secret sealed at rest),
 * who may call them, their audit entries, and the public CheckSSO with SSO enforcement.
 */

import { AuthService, SSOProvider_Type, SSOService, UtilService } from "@wap/api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertPasswordLoginAllowed, ssoEnforcedFor } from "../src/auth/directory.js";
import { fromUtf8 } from "../src/lib/bytes.js";
import { clientSecretContext } from "../src/sso/operations.js";
import { addMember, verifyDomain } from "./support/enterprise.js";
import { createTestPlatform, expectCode, type TestPlatform } from "./support.js";

let t: TestPlatform;
beforeAll(async () => {
  t = await createTestPlatform();
});
afterAll(() => t.platform.close());

const oidcRequest = {
  name: "Acme Okta",
  issuerUrl: "https://acme.okta.example/oauth2/default",
  clientId: "0oa1b2c3",
  clientSecret: "s3cr3t-value-never-returned",
  scopes: ["openid", "email", "profile"],
};

describe("OIDC provider settings", () => {
  it("creates with defaults, never returns or stores the secret in clear, and audits", async () => {
    const owner = await t.owner();
    await expectCode(
      t.call(owner.caller, SSOService.method.getOIDCProvider, { workspaceId: owner.workspaceId }),
      "not_found",
    );
    const { oidcProvider } = await t.call(owner.caller, SSOService.method.updateOIDCProvider, {
      workspaceId: owner.workspaceId,
      ...oidcRequest,
    });
    expect(oidcProvider).toMatchObject({
      workspaceId: owner.workspaceId,
      name: "Acme Okta",
      issuerUrl: oidcRequest.issuerUrl,
      clientId: "0oa1b2c3",
      scopes: ["openid", "email", "profile"],
      emailClaim: "email",
      nameClaim: "name",
      usernameClaim: "preferred_username",
      pictureClaim: "picture",
      enforceSso: false,
      allowJitProvisioning: false,
      usePkce: true,
      isActive: true,
    });
    expect(JSON.stringify(oidcProvider, (_k, v) => (typeof v === "bigint" ? String(v) : v))).not.toContain(
      "s3cr3t",
    );

    const stored = await t.storage.oidcProviders.find(owner.workspaceId);
    const sealed = stored!.sealedClientSecret!;
    expect(Buffer.from(sealed).includes(Buffer.from("s3cr3t"))).toBe(false);
    const opened = await t.platform.services.keyStore.open(sealed, clientSecretContext(owner.workspaceId));
    expect(fromUtf8(opened)).toBe(oidcRequest.clientSecret);
    // Sealed for this workspace only: the same bytes do not open as another workspace's secret.
    await expect(
      t.platform.services.keyStore.open(sealed, clientSecretContext(crypto.randomUUID())),
    ).rejects.toThrow();

    const { logs } = await t.call(owner.caller, UtilService.method.listAuditLogs, {
      workspaceId: owner.workspaceId,
      actions: ["sso.oidc.create"],
    });
    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatchObject({ actorId: owner.caller.userId, actorType: "user", statusCode: "ok" });
  });

  it("updates only the fields sent; keeps the secret when none is sent", async () => {
    const owner = await t.owner();
    const ws = { workspaceId: owner.workspaceId };
    await t.call(owner.caller, SSOService.method.updateOIDCProvider, { ...ws, ...oidcRequest });
    const before = await t.storage.oidcProviders.find(owner.workspaceId);
    t.clock.advance(1000);
    const { oidcProvider } = await t.call(owner.caller, SSOService.method.updateOIDCProvider, {
      ...ws,
      scopes: ["openid", "email"],
      enforceSso: true,
      emailClaim: "upn",
    });
    expect(oidcProvider).toMatchObject({
      name: "Acme Okta",
      clientId: "0oa1b2c3",
      scopes: ["openid", "email"],
      enforceSso: true,
      emailClaim: "upn",
    });
    const after = await t.storage.oidcProviders.find(owner.workspaceId);
    expect(after!.id).toBe(before!.id);
    expect(after!.sealedClientSecret).toEqual(before!.sealedClientSecret);
    expect(after!.createdAt).toEqual(before!.createdAt);
    expect(after!.updatedAt.getTime()).toBe(before!.updatedAt.getTime() + 1000);
    const got = await t.call(owner.caller, SSOService.method.getOIDCProvider, ws);
    expect(got.oidcProvider).toEqual(oidcProvider);
  });

  it("requires name, issuerUrl and clientId to create, openid in scopes, PKCE without a secret", async () => {
    const owner = await t.owner();
    const ws = { workspaceId: owner.workspaceId };
    const fields = async (request: Record<string, unknown>) => {
      const error = await expectCode(
        t.call(owner.caller, SSOService.method.updateOIDCProvider, { ...ws, ...request }),
        "invalid_argument",
      );
      return error.violations.map((v) => v.field).sort();
    };
    expect(await fields({ scopes: ["openid"] })).toEqual(["clientId", "issuerUrl", "name"]);
    expect(await fields({ ...oidcRequest, scopes: ["email"] })).toEqual(["scopes"]);
    expect(await fields({ ...oidcRequest, scopes: [] })).toEqual(["scopes"]);
    expect(await fields({ ...oidcRequest, issuerUrl: "urn:example:idp" })).toEqual(["issuerUrl"]);
    const { clientSecret: _, ...publicClient } = oidcRequest;
    expect(await fields({ ...publicClient, usePkce: false })).toEqual(["usePkce"]);
    const created = await t.call(owner.caller, SSOService.method.updateOIDCProvider, {
      ...ws,
      ...publicClient,
    });
    expect(created.oidcProvider?.usePkce).toBe(true);
    expect((await t.storage.oidcProviders.find(owner.workspaceId))?.sealedClientSecret).toBeNull();
  });

  it("lets admins manage SSO; editors and viewers get permission_denied, strangers not_found", async () => {
    const owner = await t.owner();
    const ws = { workspaceId: owner.workspaceId };
    await t.call(owner.caller, SSOService.method.updateOIDCProvider, { ...ws, ...oidcRequest });
    const roles = { admin: await t.signUp(), editor: await t.signUp(), viewer: await t.signUp() };
    for (const [role, user] of Object.entries(roles)) {
      await addMember(t.storage, owner.workspaceId, user.caller.userId, role as "admin");
    }
    await t.call(roles.admin.caller, SSOService.method.updateOIDCProvider, { ...ws, scopes: ["openid"] });
    await t.call(roles.admin.caller, SSOService.method.getOIDCProvider, ws);
    for (const user of [roles.editor, roles.viewer]) {
      await expectCode(t.call(user.caller, SSOService.method.getOIDCProvider, ws), "permission_denied");
      await expectCode(
        t.call(user.caller, SSOService.method.updateOIDCProvider, { ...ws, scopes: ["openid"] }),
        "permission_denied",
      );
    }
    const stranger = await t.signUp();
    await expectCode(t.call(stranger.caller, SSOService.method.getOIDCProvider, ws), "not_found");
    await expectCode(t.call({ kind: "anonymous" }, SSOService.method.getOIDCProvider, ws), "unauthenticated");
  });
});

describe("SAML provider settings", () => {
  it("creates, updates partially, drops cached IdP metadata when the URL changes", async () => {
    const owner = await t.owner();
    const ws = { workspaceId: owner.workspaceId };
    await expectCode(t.call(owner.caller, SSOService.method.getSAMLProvider, ws), "not_found");
    const error = await expectCode(
      t.call(owner.caller, SSOService.method.updateSAMLProvider, { ...ws, enforceSso: true }),
      "invalid_argument",
    );
    expect(error.violations.map((v) => v.field).sort()).toEqual(["metadataUrl", "name"]);
    const { samlProvider } = await t.call(owner.caller, SSOService.method.updateSAMLProvider, {
      ...ws,
      name: "Acme ADFS",
      metadataUrl: "https://adfs.acme.example/metadata.xml",
      emailAttribute: "mail",
    });
    expect(samlProvider).toMatchObject({
      name: "Acme ADFS",
      metadataUrl: "https://adfs.acme.example/metadata.xml",
      emailAttribute: "mail",
      nameAttribute: "",
      isActive: true,
      enforceSso: false,
      allowJitProvisioning: false,
    });
    const stored = (await t.storage.samlProviders.find(owner.workspaceId))!;
    const metadata = {
      entityId: "urn:idp",
      ssoUrl: "https://idp/sso",
      certificates: ["x"],
      fetchedAt: new Date(),
    };
    await t.storage.samlProviders.setIdpMetadata(owner.workspaceId, stored.metadataUrl, metadata);
    await t.call(owner.caller, SSOService.method.updateSAMLProvider, { ...ws, name: "renamed" });
    expect((await t.storage.samlProviders.find(owner.workspaceId))?.idpMetadata).toEqual(metadata);
    const updated = await t.call(owner.caller, SSOService.method.updateSAMLProvider, {
      ...ws,
      metadataUrl: "https://adfs.acme.example/other.xml",
    });
    expect(updated.samlProvider).toMatchObject({ name: "renamed", emailAttribute: "mail" });
    expect((await t.storage.samlProviders.find(owner.workspaceId))?.idpMetadata).toBeNull();
    const { logs } = await t.call(owner.caller, UtilService.method.listAuditLogs, {
      ...ws,
      actions: ["sso.saml.create", "sso.saml.update"],
    });
    expect(logs.map((l) => l.action)).toEqual(["sso.saml.update", "sso.saml.update", "sso.saml.create"]);
  });
});

describe("CheckSSO", () => {
  it("answers for verified domains only, lists active providers, and says when SSO is enforced", async () => {
    const owner = await t.owner();
    const ws = { workspaceId: owner.workspaceId };
    const domain = `acme-${crypto.randomUUID().slice(0, 8)}.example`;
    const check = (email: string) => t.call({ kind: "anonymous" }, SSOService.method.checkSSO, { email });
    await t.call(owner.caller, SSOService.method.updateOIDCProvider, { ...ws, ...oidcRequest });
    // The domain is not verified yet: no SSO.
    expect(await check(`ada@${domain}`)).toMatchObject({ hasSso: false, enforceSso: false, providers: [] });

    await verifyDomain(t.storage, owner.workspaceId, domain);
    const oidc = (await t.storage.oidcProviders.find(owner.workspaceId))!;
    const answer = await check(`Ada@${domain.toUpperCase()}`);
    expect(answer.hasSso).toBe(true);
    expect(answer.enforceSso).toBe(false);
    expect(answer.providers.map((p) => ({ type: p.type, id: p.id, name: p.name }))).toEqual([
      { type: SSOProvider_Type.OIDC, id: oidc.id, name: "Acme Okta" },
    ]);
    expect((await check(`ada@eng.${domain}`)).hasSso).toBe(false);
    expect(await ssoEnforcedFor(t.platform.services, `ada@${domain}`)).toBe(false);
    await assertPasswordLoginAllowed(t.platform.services, `ada@${domain}`);

    await t.call(owner.caller, SSOService.method.updateSAMLProvider, {
      ...ws,
      name: "Acme SAML",
      metadataUrl: "https://idp.example/metadata",
      enforceSso: true,
    });
    const both = await check(`ada@${domain}`);
    expect(both.enforceSso).toBe(true);
    expect(both.providers.map((p) => p.type)).toEqual([SSOProvider_Type.OIDC, SSOProvider_Type.SAML]);
    expect(await ssoEnforcedFor(t.platform.services, `grace@${domain}`)).toBe(true);
    const refused = await expectCode(
      assertPasswordLoginAllowed(t.platform.services, `grace@${domain}`),
      "failed_precondition",
    );
    expect(refused.reason).toBe("SSO_REQUIRED");
    expect(refused.message).toContain(domain);

    // An inactive provider is neither listed nor enforced.
    await t.call(owner.caller, SSOService.method.updateSAMLProvider, { ...ws, isActive: false });
    const oidcOnly = await check(`ada@${domain}`);
    expect([oidcOnly.enforceSso, oidcOnly.providers.length]).toEqual([false, 1]);
    await t.call(owner.caller, SSOService.method.updateOIDCProvider, {
      ...ws,
      scopes: ["openid"],
      isActive: false,
    });
    expect(await check(`ada@${domain}`)).toMatchObject({ hasSso: false, enforceSso: false, providers: [] });
  });

  it("Login and LoginWithBackupCode refuse an address of an SSO-enforcing domain (SSO_REQUIRED)", async () => {
    const owner = await t.owner();
    const domain = `corp-${crypto.randomUUID().slice(0, 8)}.example`;
    const email = `grace@${domain}`;
    await t.call({ kind: "anonymous" }, AuthService.method.register, {
      name: "Grace Hopper",
      email,
      username: "grace",
      password: "correct horse battery",
    });
    const login = () =>
      t.call({ kind: "anonymous" }, AuthService.method.login, { email, password: "correct horse battery" });
    expect((await login()).accessToken).not.toBe("");
    await verifyDomain(t.storage, owner.workspaceId, domain);
    await t.call(owner.caller, SSOService.method.updateOIDCProvider, {
      workspaceId: owner.workspaceId,
      ...oidcRequest,
      enforceSso: true,
    });
    const refused = await expectCode(login(), "failed_precondition");
    expect(refused.reason).toBe("SSO_REQUIRED");
    const withCode = await expectCode(
      t.call({ kind: "anonymous" }, AuthService.method.loginWithBackupCode, {
        email,
        code: "AAAA-BBBB-CCCC-DDDD",
      }),
      "failed_precondition",
    );
    expect(withCode.reason).toBe("SSO_REQUIRED");
  });

  it("rejects a missing or malformed email", async () => {
    await expectCode(t.call({ kind: "anonymous" }, SSOService.method.checkSSO, {}), "invalid_argument");
    await expectCode(
      t.call({ kind: "anonymous" }, SSOService.method.checkSSO, { email: "not-an-email" }),
      "invalid_argument",
    );
  });
});
