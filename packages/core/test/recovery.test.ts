import { AuthService, UserService } from "@wap/api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type AccountsPlatform, createAccountsPlatform, linkParam, settle } from "./support/accounts.js";
import { expectCode } from "./support.js";

const anonymous = { kind: "anonymous" } as const;
let t: AccountsPlatform;
beforeEach(async () => {
  t = await createAccountsPlatform();
});
afterEach(() => t.platform.close());

describe("email verification", () => {
  it("Register sends a link to the public base URL; VerifyEmail confirms the address once", async () => {
    const { caller, email } = await t.signUp("ada");
    const mail = await t.mail.next(email);
    expect(mail.subject).toMatch(/Confirm your email address/);
    expect(mail.text).toMatch(/^https:\/\/app\.example\.test\/verify-email\?token=[A-Za-z0-9_-]{43}$/m);
    expect(mail.html).toContain('href="https://app.example.test/verify-email?token=');
    const token = linkParam(mail, "token");
    await t.call(anonymous, AuthService.method.verifyEmail, { token });
    expect((await t.call(caller, UserService.method.whoami, {})).user?.emailVerified).toBe(true);
    await expectCode(t.call(anonymous, AuthService.method.verifyEmail, { token }), "invalid_argument");
  });

  it("carries a path on this site (an invitation) in the link, from Register and ResendVerification", async () => {
    const next = "/invites/AbC-123_x";
    await t.call(anonymous, AuthService.method.register, {
      name: "Carol Shaw",
      email: "carol@example.com",
      username: "carol",
      password: "a long enough password",
      next,
    });
    expect(linkParam(await t.mail.next("carol@example.com"), "next")).toBe(next);
    t.clock.advance(61_000);
    await t.call(anonymous, AuthService.method.resendVerification, { email: "carol@example.com", next });
    expect(linkParam(await t.mail.next("carol@example.com"), "next")).toBe(next);
  });

  it("refuses a next that leaves the site, naming the field, and creates no account", async () => {
    for (const next of [
      "https://evil.example/",
      "//evil.example/x",
      "/\\evil.example",
      "invites/x",
      "/a\nb",
      "",
    ]) {
      const refused = await expectCode(
        t.call(anonymous, AuthService.method.register, {
          name: "Mallory",
          email: "mallory@example.com",
          username: "mallory",
          password: "a long enough password",
          next,
        }),
        "invalid_argument",
      );
      expect(refused.message, next).toMatch(/^invalid request: next: must be /);
    }
    expect(await t.storage.users.findByUsername("mallory")).toBeNull();
    await settle();
    expect(t.mail.sent).toHaveLength(0);
  });

  it("answers wrong, expired, reused and missing tokens the same way", async () => {
    const { email } = await t.signUp("ada");
    const token = linkParam(await t.mail.next(email), "token");
    const bad = async (request: { token?: string }) =>
      (await expectCode(t.call(anonymous, AuthService.method.verifyEmail, request), "invalid_argument"))
        .message;
    const wrong = await bad({ token: `${token.slice(0, -1)}x` });
    const missing = await bad({});
    const empty = await bad({ token: "" });
    t.clock.advance(24 * 3600 * 1000);
    const expired = await bad({ token });
    expect(new Set([wrong, missing, empty, expired]).size).toBe(1);
    expect(wrong).not.toMatch(/expired\b.*\bused|wrong/i);
  });

  it("a verification link dies when the account moved to another address", async () => {
    const { caller, email } = await t.signUp("ada");
    const first = linkParam(await t.mail.next(email), "token");
    const { emailSent } = await t.call(caller, UserService.method.updateProfile, {
      email: "ada.new@example.com",
    });
    expect(emailSent).toBe(true);
    const change = linkParam(await t.mail.next("ada.new@example.com"), "token");
    await t.call(anonymous, AuthService.method.verifyEmail, { token: change });
    await expectCode(t.call(anonymous, AuthService.method.verifyEmail, { token: first }), "invalid_argument");
    const { user } = await t.call(caller, UserService.method.whoami, {});
    expect(user).toMatchObject({ email: "ada.new@example.com", emailVerified: true });
  });

  it("ResendVerification mails unverified accounts only, at most once a minute, and always answers {}", async () => {
    const { email } = await t.signUp("ada", { verified: false });
    const first = linkParam(await t.mail.next(email), "token");
    // Within the interval: nothing new.
    await t.call(anonymous, AuthService.method.resendVerification, { email });
    await settle();
    expect(t.mail.sent).toHaveLength(0);
    t.clock.advance(61_000);
    await t.call(anonymous, AuthService.method.resendVerification, { email: email.toUpperCase() });
    const second = linkParam(await t.mail.next(email), "token");
    // The new link replaces the old one.
    await expectCode(t.call(anonymous, AuthService.method.verifyEmail, { token: first }), "invalid_argument");
    await t.call(anonymous, AuthService.method.verifyEmail, { token: second });
    t.clock.advance(61_000);
    await t.call(anonymous, AuthService.method.resendVerification, { email });
    await t.call(anonymous, AuthService.method.resendVerification, { email: "nobody@example.com" });
    await t.call(anonymous, AuthService.method.resendVerification, {});
    await settle();
    expect(t.mail.sent).toHaveLength(0);
  });
});

describe("password reset", () => {
  it("ForgotPassword answers the same for unknown and known emails, and mails only the known", async () => {
    const { email } = await t.signUp("ada");
    await t.mail.next(email);
    const known = await t.call(anonymous, AuthService.method.forgotPassword, { email });
    const unknown = await t.call(anonymous, AuthService.method.forgotPassword, {
      email: "nobody@example.com",
    });
    expect(known).toEqual(unknown);
    const mail = await t.mail.next(email);
    expect(mail.subject).toMatch(/Reset your/);
    expect(mail.text).toMatch(/^https:\/\/app\.example\.test\/reset-password\?token=/m);
    await settle();
    expect(t.mail.sent).toHaveLength(0);
  });

  it("ResetPassword sets the password, verifies the email and ends every session", async () => {
    const { email, tokens } = await t.signUp("ada");
    await t.mail.next(email);
    await t.call(anonymous, AuthService.method.forgotPassword, { email });
    const token = linkParam(await t.mail.next(email), "token");
    await t.call(anonymous, AuthService.method.resetPassword, { token, newPassword: "n3w password!" });

    // (t.call hands the caller over as is; the access token is what a client would send.)
    await expectCode(t.platform.authenticate({ bearer: tokens.accessToken }), "unauthenticated");
    await expectCode(
      t.call(anonymous, AuthService.method.refreshToken, { refreshToken: tokens.refreshToken }),
      "unauthenticated",
    );
    await expectCode(
      t.call(anonymous, AuthService.method.login, { email, password: "correct horse battery" }),
      "unauthenticated",
    );
    const fresh = await t.call(anonymous, AuthService.method.login, { email, password: "n3w password!" });
    const { caller: again } = await t.platform.authenticate({ bearer: fresh.accessToken });
    expect((await t.call(again, UserService.method.whoami, {})).user?.emailVerified).toBe(true);
    // Spent.
    await expectCode(
      t.call(anonymous, AuthService.method.resetPassword, { token, newPassword: "another one!" }),
      "invalid_argument",
    );
  });

  it("a reset link is used exactly once even when requests race", async () => {
    const { email } = await t.signUp("ada");
    await t.mail.next(email);
    await t.call(anonymous, AuthService.method.forgotPassword, { email });
    const token = linkParam(await t.mail.next(email), "token");
    const results = await Promise.allSettled(
      Array.from({ length: 6 }, (_, i) =>
        t.call(anonymous, AuthService.method.resetPassword, { token, newPassword: `password number ${i}` }),
      ),
    );
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
  });

  it("wrong, expired and reused reset tokens get one answer", async () => {
    const { email } = await t.signUp("ada");
    await t.mail.next(email);
    await t.call(anonymous, AuthService.method.forgotPassword, { email });
    const token = linkParam(await t.mail.next(email), "token");
    const bad = async (value: string) =>
      (
        await expectCode(
          t.call(anonymous, AuthService.method.resetPassword, { token: value, newPassword: "long enough" }),
          "invalid_argument",
        )
      ).message;
    const wrong = await bad("definitely-not-a-token");
    t.clock.advance(3600 * 1000);
    const expired = await bad(token);
    expect(wrong).toBe(expired);
  });

  it("a passwordless account gets reset mails only with email recovery on", async () => {
    const { caller, email } = await t.signUp("ada");
    await t.mail.next(email);
    await t.storage.users.update(caller.userId, { passwordHash: null }, t.clock.now());
    await t.call(anonymous, AuthService.method.forgotPassword, { email });
    await settle();
    expect(t.mail.sent).toHaveLength(0);
    await t.call(caller, UserService.method.setEmailRecovery, { enable: true });
    expect((await t.call(caller, UserService.method.whoami, {})).user?.enableEmailRecovery).toBe(true);
    await t.call(anonymous, AuthService.method.forgotPassword, { email });
    expect((await t.mail.next(email)).subject).toMatch(/Reset/);
  });
});

describe("registration does not reveal accounts", () => {
  it("registering a taken email answers like a new one and sends nothing", async () => {
    const { email } = await t.signUp("ada");
    await t.mail.next(email);
    const again = await t.call(anonymous, AuthService.method.register, {
      name: "Someone",
      email,
      username: "someone",
      password: "whatever long",
    });
    expect(again).toEqual(
      await t.call(anonymous, AuthService.method.register, {
        name: "New person",
        email: "new@example.com",
        username: "newperson",
        password: "whatever long",
      }),
    );
    await t.mail.next("new@example.com");
    await settle();
    expect(t.mail.sent).toHaveLength(0);
  });
});
