/**
 * OIDC sign-in end to end against a real OpenID Provider (oidc-provider on loopback), driven
 * through its login and consent pages with plain HTTP requests: JIT provisioning, linking an
 * existing verified account, the linked account in ListLinkedAccounts, and every check that must
 * refuse (state reuse, another browser, PKCE verifier, nonce, provider error, domain, JIT off).
 */

import { SSOService, UserService, UtilService } from "@wap/api";
import { browseSignIn, startOidcIdp, type TestIdp } from "@wap/test-kit/oidc-idp";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { sha256Hex } from "../src/sso/login-state.js";
import { beginOidcSignIn, finishOidcSignIn } from "../src/sso/oidc.js";
import { useIntegrations, verifyDomain } from "./support/enterprise.js";
import { createTestPlatform, expectCode, type TestPlatform } from "./support.js";

const baseUrl = "https://wap.example";
const redirectUri = `${baseUrl}/v1/sso/oidc/callback`;
const browser = { ipAddress: "203.0.113.9", userAgent: "TestBrowser/1.0", requestId: "req-sso" };

let t: TestPlatform;
let idp: TestIdp;
let owner: Awaited<ReturnType<TestPlatform["owner"]>>;
let domain: string;

beforeAll(async () => {
  idp = await startOidcIdp(redirectUri);
  t = await createTestPlatform();
  // The platform's clock is only used for our own records; the IdP's tokens carry real time.
  t.clock.set(new Date());
  useIntegrations(t.platform, { sso: { baseUrl, allowInsecureHttp: true, allowNetworks: ["127.0.0.0/8"] } });
});
afterAll(async () => {
  await t.platform.close();
  await idp.close();
});

/** A fresh workspace with a verified domain and an OIDC provider at the test IdP. */
async function configure(overrides: Record<string, unknown> = {}) {
  owner = await t.owner();
  domain = `corp-${crypto.randomUUID().slice(0, 8)}.example`;
  await verifyDomain(t.storage, owner.workspaceId, domain);
  await t.call(owner.caller, SSOService.method.updateOIDCProvider, {
    workspaceId: owner.workspaceId,
    name: "Test IdP",
    issuerUrl: idp.issuer,
    clientId: "wap-confidential",
    clientSecret: "wap-confidential-secret",
    scopes: ["openid", "email", "profile"],
    allowJitProvisioning: true,
    ...overrides,
  });
  return (await t.storage.oidcProviders.find(owner.workspaceId))!;
}

function idpUser(local: string, extra: Partial<{ email_verified: boolean; email: string }> = {}) {
  const sub = `sub-${crypto.randomUUID()}`;
  idp.users.set(sub, {
    sub,
    email: `${local}@${domain}`,
    email_verified: true,
    name: `${local} Example`,
    preferred_username: `${local}.x`,
    picture: "https://img.example/p.png",
    ...extra,
  });
  return sub;
}

async function signIn(target: Parameters<typeof beginOidcSignIn>[1], sub: string) {
  const start = await beginOidcSignIn(t.platform.services, target, { returnTo: "/workspaces?x=1" });
  const callback = await browseSignIn(start.authorizationUrl, redirectUri, sub);
  return { start, callback };
}

describe("OIDC sign-in", () => {
  beforeEach(async () => {
    await configure();
  });

  it("creates the user on first sign-in (JIT), links the identity, makes them a viewer, audits", async () => {
    const provider = (await t.storage.oidcProviders.find(owner.workspaceId))!;
    const sub = idpUser("ada");
    const { start, callback } = await signIn({ providerId: provider.id }, sub);

    const authorization = new URL(start.authorizationUrl);
    expect(authorization.origin).toBe(idp.issuer);
    expect(authorization.searchParams.get("code_challenge_method")).toBe("S256");
    expect(authorization.searchParams.get("redirect_uri")).toBe(redirectUri);
    expect(authorization.searchParams.get("scope")).toBe("openid email profile");
    const state = authorization.searchParams.get("state")!;
    // State, nonce and verifier live on the server; the browser only carries the state.
    const stored = await t.storage.ssoLoginStates.find(sha256Hex(state), t.clock.now());
    expect(stored?.data.nonce).toBe(authorization.searchParams.get("nonce"));
    expect(stored?.data.codeVerifier).toBeDefined();
    expect(start.binding).toMatchObject({ sameSite: "lax", path: "/v1/sso" });

    const result = await finishOidcSignIn(
      t.platform.services,
      { params: callback.searchParams, binding: start.binding.value },
      browser,
    );
    expect(result).toMatchObject({
      workspaceId: owner.workspaceId,
      created: true,
      linked: true,
      returnTo: "/workspaces?x=1",
    });

    const user = (await t.storage.users.findById(result.userId))!;
    expect(user).toMatchObject({
      email: `ada@${domain}`,
      emailVerified: true,
      name: "ada Example",
      username: "ada-x",
      passwordHash: null,
      picture: "https://img.example/p.png",
    });
    const { caller } = await t.platform.authenticate({ bearer: result.accessToken });
    expect(caller).toMatchObject({ kind: "user", userId: user.id });
    const { accounts } = await t.call(caller, UserService.method.listLinkedAccounts, {});
    expect(accounts).toHaveLength(1);
    expect(accounts[0]).toMatchObject({
      provider: `oidc-${owner.workspaceId}`,
      providerId: `${idp.issuer}|${sub}`,
      providerEmail: `ada@${domain}`,
      providerUsername: "ada.x",
      protocol: "oidc",
    });
    expect((await t.storage.members.find(owner.workspaceId, user.id))?.role).toBe("viewer");

    const { logs } = await t.call(owner.caller, UtilService.method.listAuditLogs, {
      workspaceId: owner.workspaceId,
      actorIds: [user.id],
    });
    expect(logs.map((l) => l.action).sort()).toEqual(["member.add.sso", "sso.login.oidc"]);
    expect(logs[0]).toMatchObject({ ipAddress: browser.ipAddress, userAgent: browser.userAgent });

    // The same identity again: the same user, nothing new.
    const again = await signIn({ workspaceId: owner.workspaceId }, sub);
    const second = await finishOidcSignIn(
      t.platform.services,
      { params: again.callback.searchParams, binding: again.start.binding.value },
      browser,
    );
    expect(second).toMatchObject({ userId: user.id, created: false, linked: false });
  });

  it("links an existing account with that verified address instead of creating one", async () => {
    const existing = await t.signUp(`grace${crypto.randomUUID().slice(0, 6)}`);
    const local = existing.email.split("@")[0]!;
    await t.storage.users.update(
      existing.caller.userId,
      { email: `${local}@${domain}`, emailVerified: true },
      new Date(),
    );
    const sub = idpUser(local);
    const { start, callback } = await signIn({ email: `${local}@${domain}` }, sub);
    const result = await finishOidcSignIn(
      t.platform.services,
      { params: callback.searchParams, binding: start.binding.value },
      browser,
    );
    expect(result).toMatchObject({ userId: existing.caller.userId, created: false, linked: true });
    const { accounts } = await t.call(existing.caller, UserService.method.listLinkedAccounts, {});
    expect(accounts.map((a) => a.protocol)).toEqual(["oidc"]);
  });

  it("replaces the link of an identity from the workspace's previous IdP (issuers differ)", async () => {
    const sub = idpUser("mover");
    const first = await signIn({ workspaceId: owner.workspaceId }, sub);
    const { userId } = await finishOidcSignIn(
      t.platform.services,
      { params: first.callback.searchParams, binding: first.start.binding.value },
      browser,
    );
    const provider = `oidc-${owner.workspaceId}`;
    // As if the link had been made at another issuer before the workspace switched IdPs.
    const [link] = await t.storage.linkedAccounts.listByUser(userId);
    await t.storage.linkedAccounts.delete(userId, provider);
    await t.storage.linkedAccounts.insert({ ...link!, providerId: `https://old-idp.example|${sub}` });
    const again = await signIn({ workspaceId: owner.workspaceId }, sub);
    const result = await finishOidcSignIn(
      t.platform.services,
      { params: again.callback.searchParams, binding: again.start.binding.value },
      browser,
    );
    expect(result).toMatchObject({ userId, created: false, linked: true });
    expect((await t.storage.linkedAccounts.listByUser(userId)).map((l) => l.providerId)).toEqual([
      `${idp.issuer}|${sub}`,
    ]);
  });

  it("refuses to link an account whose address was never verified", async () => {
    const squatter = await t.signUp(`sq${crypto.randomUUID().slice(0, 6)}`, { verified: false });
    const local = squatter.email.split("@")[0]!;
    await t.storage.users.update(squatter.caller.userId, { email: `${local}@${domain}` }, new Date());
    const { start, callback } = await signIn({ workspaceId: owner.workspaceId }, idpUser(local));
    const error = await expectCode(
      finishOidcSignIn(
        t.platform.services,
        { params: callback.searchParams, binding: start.binding.value },
        browser,
      ),
      "failed_precondition",
    );
    expect(error.reason).toBe("ACCOUNT_EMAIL_NOT_VERIFIED");
  });

  it("refuses addresses outside the workspace's verified domains, unverified addresses, and JIT when off", async () => {
    const finish = async (sub: string) => {
      const { start, callback } = await signIn({ workspaceId: owner.workspaceId }, sub);
      return finishOidcSignIn(
        t.platform.services,
        { params: callback.searchParams, binding: start.binding.value },
        browser,
      );
    };
    const outsider = idpUser("eve", { email: "eve@not-theirs.example" });
    expect((await expectCode(finish(outsider), "permission_denied")).reason).toBe("SSO_DOMAIN_NOT_VERIFIED");
    const unverified = idpUser("mallory", { email_verified: false });
    expect((await expectCode(finish(unverified), "permission_denied")).reason).toBe("SSO_EMAIL_NOT_VERIFIED");
    await t.call(owner.caller, SSOService.method.updateOIDCProvider, {
      workspaceId: owner.workspaceId,
      scopes: ["openid", "email", "profile"],
      allowJitProvisioning: false,
    });
    expect((await expectCode(finish(idpUser("newcomer")), "permission_denied")).reason).toBe(
      "SSO_JIT_DISABLED",
    );
    expect(await t.storage.users.findByEmail(`newcomer@${domain}`)).toBeNull();
  });

  it("a state works once, only in the browser that started it, and not after it expired", async () => {
    const sub = idpUser("once");
    const { start, callback } = await signIn({ workspaceId: owner.workspaceId }, sub);
    const params = callback.searchParams;
    // Another browser (no cookie, or another cookie) is refused, and that burns the state.
    const other = await signIn({ workspaceId: owner.workspaceId }, sub);
    await expectCode(
      finishOidcSignIn(t.platform.services, { params: other.callback.searchParams }, browser),
      "unauthenticated",
    );
    await expectCode(
      finishOidcSignIn(
        t.platform.services,
        { params: other.callback.searchParams, binding: start.binding.value },
        browser,
      ),
      "unauthenticated",
    );
    const tampered = new URLSearchParams(params);
    tampered.set("state", `${params.get("state")}x`);
    await expectCode(
      finishOidcSignIn(t.platform.services, { params: tampered, binding: start.binding.value }, browser),
      "unauthenticated",
    );
    await finishOidcSignIn(t.platform.services, { params, binding: start.binding.value }, browser);
    const replay = await expectCode(
      finishOidcSignIn(t.platform.services, { params, binding: start.binding.value }, browser),
      "unauthenticated",
    );
    expect(replay.reason).toBe("SSO_STATE_INVALID");

    const late = await signIn({ workspaceId: owner.workspaceId }, sub);
    t.clock.advance(601_000);
    try {
      await expectCode(
        finishOidcSignIn(
          t.platform.services,
          { params: late.callback.searchParams, binding: late.start.binding.value },
          browser,
        ),
        "unauthenticated",
      );
    } finally {
      t.clock.set(new Date());
    }
  });

  it("the token exchange fails with a wrong PKCE verifier, and the ID token with a wrong nonce", async () => {
    const sub = idpUser("pkce");
    for (const field of ["codeVerifier", "nonce"] as const) {
      const { start, callback } = await signIn({ workspaceId: owner.workspaceId }, sub);
      const id = sha256Hex(callback.searchParams.get("state")!);
      const state = (await t.storage.ssoLoginStates.consume(id, "oidc", t.clock.now()))!;
      await t.storage.ssoLoginStates.insert({ ...state, data: { ...state.data, [field]: "A".repeat(43) } });
      const error = await expectCode(
        finishOidcSignIn(
          t.platform.services,
          { params: callback.searchParams, binding: start.binding.value },
          browser,
        ),
        "unauthenticated",
      );
      expect(error.reason).toBe("SSO_OIDC_REJECTED");
    }
  });

  it("reports the provider's refusal (the user aborted at the IdP)", async () => {
    const start = await beginOidcSignIn(t.platform.services, { workspaceId: owner.workspaceId });
    const callback = await browseSignIn(start.authorizationUrl, redirectUri, idpUser("quitter"), {
      abort: true,
    });
    expect(callback.searchParams.get("error")).toBe("access_denied");
    const error = await expectCode(
      finishOidcSignIn(
        t.platform.services,
        { params: callback.searchParams, binding: start.binding.value },
        browser,
      ),
      "unauthenticated",
    );
    expect(error.reason).toBe("SSO_PROVIDER_ERROR");
  });
});

describe("OIDC provider variants", () => {
  it("signs in without PKCE when the provider is set so, and with a public client (PKCE only)", async () => {
    await configure({ usePkce: false });
    const sub = idpUser("nopkce");
    const plain = await signIn({ workspaceId: owner.workspaceId }, sub);
    expect(new URL(plain.start.authorizationUrl).searchParams.has("code_challenge")).toBe(false);
    await finishOidcSignIn(
      t.platform.services,
      { params: plain.callback.searchParams, binding: plain.start.binding.value },
      browser,
    );

    await configure({ clientId: "wap-public", clientSecret: undefined });
    // The workspace's provider was created as a public client: no secret, PKCE required.
    expect((await t.storage.oidcProviders.find(owner.workspaceId))?.sealedClientSecret).toBeNull();
    const sub2 = idpUser("public");
    const pub = await signIn({ workspaceId: owner.workspaceId }, sub2);
    const result = await finishOidcSignIn(
      t.platform.services,
      { params: pub.callback.searchParams, binding: pub.start.binding.value },
      browser,
    );
    expect(result.created).toBe(true);
  });

  it("refuses http issuers unless allowed, and inactive or unknown providers", async () => {
    const provider = await configure();
    useIntegrations(t.platform, { sso: { baseUrl } });
    try {
      await expectCode(
        beginOidcSignIn(t.platform.services, { providerId: provider.id }),
        "failed_precondition",
      );
    } finally {
      useIntegrations(t.platform, {
        sso: { baseUrl, allowInsecureHttp: true, allowNetworks: ["127.0.0.0/8"] },
      });
    }
    await expectCode(beginOidcSignIn(t.platform.services, { providerId: crypto.randomUUID() }), "not_found");
    await expectCode(
      beginOidcSignIn(t.platform.services, { email: "x@unknown-domain.example" }),
      "not_found",
    );
    await t.call(owner.caller, SSOService.method.updateOIDCProvider, {
      workspaceId: owner.workspaceId,
      scopes: ["openid"],
      isActive: false,
    });
    await expectCode(beginOidcSignIn(t.platform.services, { providerId: provider.id }), "not_found");
  });
});
