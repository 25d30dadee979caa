/**
 * Who an account belongs to: pre-hijacking (nothing but a password before the address is proven,
 * and the first proof clears out the rest), registration that reveals no accounts, one enforced
 * SSO rule for every sign-in method, and profile pictures that are web addresses only.
 */
import { AuthService, CredentialService, SSOService, UserService } from "@wap/api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { hashSecret } from "../src/auth/service-account-tokens.js";
import { normalizeBackupCode } from "../src/credentials/backup-codes.js";
import {
  type AccountsPlatform,
  createAccountsPlatform,
  linkParam,
  publicBaseUrl,
  settle,
} from "./support/accounts.js";
import { createSoftwareAuthenticator } from "./support/authenticator.js";
import { verifyDomain } from "./support/enterprise.js";
import { expectCode } from "./support.js";

const anonymous = { kind: "anonymous" } as const;
const password = "correct horse battery";
let t: AccountsPlatform;
beforeEach(async () => {
  t = await createAccountsPlatform();
});
afterEach(() => t.platform.close());

type SignedUp = Awaited<ReturnType<AccountsPlatform["signUp"]>>;

async function registerPasskey(user: SignedUp, key = createSoftwareAuthenticator({ origin: publicBaseUrl })) {
  const { optionsJson } = await t.call(user.caller, CredentialService.method.beginPasskeyRegistration, {});
  await t.call(user.caller, CredentialService.method.finishPasskeyRegistration, {
    credentialJson: key.create(optionsJson),
  });
  return key;
}

async function passkeyLogin(key: ReturnType<typeof createSoftwareAuthenticator>) {
  const { optionsJson } = await t.call(anonymous, AuthService.method.beginPasskeyLogin, {});
  return t.call(anonymous, AuthService.method.finishPasskeyLogin, { credentialJson: key.get(optionsJson) });
}

/** What a squatter left on an account from before the rule: a passkey and a backup code. */
async function plantCredentials(user: SignedUp) {
  await t.storage.users.update(user.caller.userId, { emailVerified: true }, t.clock.now());
  const key = await registerPasskey(user);
  const { codes } = await t.call(user.caller, CredentialService.method.createBackupCodes, {});
  await t.storage.users.update(user.caller.userId, { emailVerified: false }, t.clock.now());
  return { key, code: codes[0]! };
}

describe("account pre-hijacking", () => {
  it("no passkey or backup codes before the address is verified", async () => {
    const squatter = await t.signUp("victim", { verified: false });
    for (const call of [
      () => t.call(squatter.caller, CredentialService.method.createBackupCodes, {}),
      () => t.call(squatter.caller, CredentialService.method.beginPasskeyRegistration, {}),
    ]) {
      expect((await expectCode(call(), "failed_precondition")).reason).toBe("EMAIL_NOT_VERIFIED");
    }
    expect(await t.storage.backupCodes.listByUser(squatter.caller.userId)).toEqual([]);
  });

  it("the owner's password reset removes every credential and session the registrant left", async () => {
    const squatter = await t.signUp("victim", { verified: false });
    const { key, code } = await plantCredentials(squatter);
    await t.mail.next(squatter.email);
    await t.call(anonymous, AuthService.method.forgotPassword, { email: squatter.email });
    const token = linkParam(await t.mail.next(squatter.email), "token");
    await t.call(anonymous, AuthService.method.resetPassword, { token, newPassword: "the owner's own" });

    await expectCode(passkeyLogin(key), "unauthenticated");
    await expectCode(
      t.call(anonymous, AuthService.method.loginWithBackupCode, { email: squatter.email, code }),
      "unauthenticated",
    );
    await expectCode(t.platform.authenticate({ bearer: squatter.tokens.accessToken }), "unauthenticated");
    expect(await t.storage.passkeys.listByUser(squatter.caller.userId)).toEqual([]);
    await t.call(anonymous, AuthService.method.login, { email: squatter.email, password: "the owner's own" });
  });

  it("a verification by someone not signed in to the account removes the password and everything else", async () => {
    const squatter = await t.signUp("victim", { verified: false });
    const { key } = await plantCredentials(squatter);
    const token = linkParam(await t.mail.next(squatter.email), "token");
    // The mailbox's owner follows the link, in a browser not signed in to this account.
    await t.call(anonymous, AuthService.method.verifyEmail, { token });

    await expectCode(
      t.call(anonymous, AuthService.method.login, { email: squatter.email, password }),
      "unauthenticated",
    );
    await expectCode(passkeyLogin(key), "unauthenticated");
    await expectCode(t.platform.authenticate({ bearer: squatter.tokens.accessToken }), "unauthenticated");
    const stored = await t.storage.users.findById(squatter.caller.userId);
    expect(stored).toMatchObject({ emailVerified: true, passwordHash: null, enableEmailRecovery: true });
    // The owner sets a password through the mailbox.
    await t.call(anonymous, AuthService.method.forgotPassword, { email: squatter.email });
    const reset = linkParam(await t.mail.next(squatter.email), "token");
    await t.call(anonymous, AuthService.method.resetPassword, { token: reset, newPassword: "mine at last" });
    await t.call(anonymous, AuthService.method.login, { email: squatter.email, password: "mine at last" });
  });

  it("the registrant verifying while signed in keeps the password and that session, and only those", async () => {
    const ada = await t.signUp("ada", { verified: false });
    const other = await t.call(anonymous, AuthService.method.login, { email: ada.email, password });
    const token = linkParam(await t.mail.next(ada.email), "token");
    await t.call(ada.caller, AuthService.method.verifyEmail, { token });

    expect((await t.call(ada.caller, UserService.method.whoami, {})).user?.emailVerified).toBe(true);
    await t.platform.authenticate({ bearer: ada.tokens.accessToken });
    await expectCode(t.platform.authenticate({ bearer: other.accessToken }), "unauthenticated");
    await t.call(anonymous, AuthService.method.login, { email: ada.email, password });
    // Verified now: credentials may be added, and a later verification changes nothing.
    await t.call(ada.caller, CredentialService.method.createBackupCodes, {});
    expect(await t.storage.backupCodes.listByUser(ada.caller.userId)).toHaveLength(10);
  });
});

describe("registration does not reveal whether an email has an account", () => {
  it("a taken username gets the same answer for a registered and an unknown email", async () => {
    const ada = await t.signUp("ada");
    const grace = await t.signUp("grace");
    const register = (email: string, username: string) =>
      t.call(anonymous, AuthService.method.register, { name: "Some One", email, username, password });
    const existing = await expectCode(register(grace.email, "ada"), "already_exists");
    const unknown = await expectCode(register("nobody@example.com", "ada"), "already_exists");
    expect([existing.reason, existing.message]).toEqual([unknown.reason, unknown.message]);
    // Usernames are one whatever their case.
    expect((await expectCode(register("nobody@example.com", "ADA"), "already_exists")).reason).toBe(
      "USERNAME_TAKEN",
    );
    // A free username: the same empty answer for both, and no second account.
    expect(await register(ada.email, "fresh-name")).toEqual(await register("new@example.com", "other-name"));
    expect((await t.storage.users.findByEmail(ada.email))?.username).toBe("ada");
    expect(await t.storage.users.findByUsername("fresh-name")).toBeNull();
  });

  it("ForgotPassword answers before any work that depends on the address", async () => {
    const ada = await t.signUp("ada");
    await t.mail.next(ada.email);
    // Both answers are given while the account work has not started: the same path for both.
    const known = await t.call(anonymous, AuthService.method.forgotPassword, { email: ada.email });
    expect(await t.storage.oneTimeTokens.latestForUser(ada.caller.userId, "reset_password")).toBeNull();
    const unknown = await t.call(anonymous, AuthService.method.forgotPassword, { email: "no@example.com" });
    expect(known).toEqual(unknown);
    expect((await t.mail.next(ada.email)).subject).toMatch(/Reset/);
    await settle();
    expect(t.mail.sent).toHaveLength(0);
  });
});

describe("enforced SSO applies to every way of signing in", () => {
  it("a passkey signs in no more than a password or a backup code once the domain requires SSO", async () => {
    const ada = await t.signUp("ada");
    const key = await registerPasskey(ada);
    const { codes } = await t.call(ada.caller, CredentialService.method.createBackupCodes, {});
    await passkeyLogin(key);

    const owner = await t.owner();
    await verifyDomain(t.storage, owner.workspaceId, "example.com");
    await t.call(owner.caller, SSOService.method.updateSAMLProvider, {
      workspaceId: owner.workspaceId,
      name: "Example SAML",
      metadataUrl: "https://idp.example/metadata",
      enforceSso: true,
    });
    for (const attempt of [
      () => passkeyLogin(key),
      () => t.call(anonymous, AuthService.method.login, { email: ada.email, password }),
      () => t.call(anonymous, AuthService.method.loginWithBackupCode, { email: ada.email, code: codes[0]! }),
    ]) {
      expect((await expectCode(attempt(), "failed_precondition")).reason).toBe("SSO_REQUIRED");
    }
    // Refused before anything was spent: the code still works once SSO is no longer enforced.
    const hash = hashSecret(normalizeBackupCode(codes[0]!));
    expect(await t.storage.backupCodes.consume(ada.caller.userId, hash, t.clock.now())).toBe(true);
  });
});

describe("profile pictures", () => {
  it("only web addresses are stored; javascript: and others are refused naming the field", async () => {
    const ada = await t.signUp("ada");
    for (const picture of [
      "javascript:alert(document.cookie)",
      "data:image/svg+xml,<svg onload=alert(1)>",
      "http://cdn.example.com/a.png",
      "/relative.png",
      `https://cdn.example.com/${"a".repeat(2048)}`,
    ]) {
      const error = await expectCode(
        t.call(ada.caller, UserService.method.updateProfile, { picture }),
        "invalid_argument",
      );
      expect(error.message).toContain("picture");
    }
    const ok = "https://cdn.example.com/ada.png";
    expect((await t.call(ada.caller, UserService.method.updateProfile, { picture: ok })).user?.picture).toBe(
      ok,
    );
    expect((await t.call(ada.caller, UserService.method.updateProfile, { picture: "" })).user?.picture).toBe(
      "",
    );
  });

  it("http is accepted when the platform itself is reached over loopback", async () => {
    const local = await createAccountsPlatform({ publicBaseUrl: "http://127.0.0.1:8080" });
    try {
      const ada = await local.signUp("ada");
      const picture = "http://localhost:5173/ada.png";
      const { user } = await local.call(ada.caller, UserService.method.updateProfile, { picture });
      expect(user?.picture).toBe(picture);
    } finally {
      await local.platform.close();
    }
  });
});
