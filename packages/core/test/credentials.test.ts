import { create, toJsonString } from "@bufbuild/protobuf";
import { AuthService, CredentialService, ListBackupCodesResponseSchema, UserService } from "@wap/api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createCallContext } from "../src/context.js";
import { type AccountsPlatform, createAccountsPlatform, publicBaseUrl } from "./support/accounts.js";
import { createSoftwareAuthenticator } from "./support/authenticator.js";
import { expectCode } from "./support.js";

const anonymous = { kind: "anonymous" } as const;
const password = "correct horse battery";
let t: AccountsPlatform;
beforeEach(async () => {
  t = await createAccountsPlatform();
});
afterEach(() => t.platform.close());

/** Login from a given client address. */
const loginFrom = (ipAddress: string, email: string, pw: string) =>
  t.platform.invoke(
    AuthService.method.login,
    createCallContext(anonymous, { ipAddress }),
    create(AuthService.method.login.input, { email, password: pw }),
  );

describe("UpdatePassword and DeletePassword", () => {
  it("UpdatePassword needs the current password and signs out the other sessions", async () => {
    const { caller, email } = await t.signUp("ada");
    const other = await t.call(anonymous, AuthService.method.login, { email, password });
    const wrong = await expectCode(
      t.call(caller, CredentialService.method.updatePassword, {
        currentPassword: "not it",
        newPassword: "brand new secret",
      }),
      "invalid_argument",
    );
    expect(wrong.violations.map((v) => v.field)).toEqual(["currentPassword"]);
    const missing = await expectCode(
      t.call(caller, CredentialService.method.updatePassword, { newPassword: "brand new secret" }),
      "invalid_argument",
    );
    expect(missing.message).toContain("currentPassword: is required");

    await t.call(caller, CredentialService.method.updatePassword, {
      currentPassword: password,
      newPassword: "brand new secret",
    });
    await expectCode(t.platform.authenticate({ bearer: other.accessToken }), "unauthenticated");
    // The caller's own session goes on.
    await t.call(caller, UserService.method.whoami, {});
    await expectCode(t.call(anonymous, AuthService.method.login, { email, password }), "unauthenticated");
    await t.call(anonymous, AuthService.method.login, { email, password: "brand new secret" });
  });

  it("DeletePassword needs another way to sign in and the current password", async () => {
    const { caller, email } = await t.signUp("ada");
    const refused = await expectCode(
      t.call(caller, CredentialService.method.deletePassword, { currentPassword: password }),
      "failed_precondition",
    );
    expect(refused.reason).toBe("LAST_SIGN_IN_METHOD");

    const key = createSoftwareAuthenticator({ origin: publicBaseUrl });
    const { optionsJson } = await t.call(caller, CredentialService.method.beginPasskeyRegistration, {});
    await t.call(caller, CredentialService.method.finishPasskeyRegistration, {
      credentialJson: key.create(optionsJson),
    });
    await expectCode(
      t.call(caller, CredentialService.method.deletePassword, { currentPassword: "wrong one" }),
      "invalid_argument",
    );
    await t.call(caller, CredentialService.method.deletePassword, { currentPassword: password });
    await expectCode(t.call(anonymous, AuthService.method.login, { email, password }), "unauthenticated");
    await expectCode(
      t.call(caller, CredentialService.method.deletePassword, { currentPassword: password }),
      "failed_precondition",
    );
    // Without a password, UpdatePassword sets one with nothing to prove.
    await t.call(caller, CredentialService.method.updatePassword, { newPassword: "back again, longer" });
    await t.call(anonymous, AuthService.method.login, { email, password: "back again, longer" });
  });
});

describe("login throttling", () => {
  it("after 5 failures an account must wait, whatever the password, then backs off further", async () => {
    const { email } = await t.signUp("ada");
    for (let i = 0; i < 5; i++) {
      await expectCode(
        t.call(anonymous, AuthService.method.login, { email, password: `guess ${i}` }),
        "unauthenticated",
      );
    }
    const right = await expectCode(
      t.call(anonymous, AuthService.method.login, { email, password }),
      "resource_exhausted",
    );
    const wrong = await expectCode(
      t.call(anonymous, AuthService.method.login, { email, password: "guess again" }),
      "resource_exhausted",
    );
    // Same answer: a throttled attempt says nothing about the password.
    expect(right.message).toBe(wrong.message);
    expect(right.headers["Retry-After"]).toBe("1");
    t.clock.advance(1000);
    await expectCode(
      t.call(anonymous, AuthService.method.login, { email, password: "guess 6" }),
      "unauthenticated",
    );
    const longer = await expectCode(
      t.call(anonymous, AuthService.method.login, { email, password }),
      "resource_exhausted",
    );
    expect(longer.headers["Retry-After"]).toBe("2");
    t.clock.advance(2000);
    // The right password gets in once the wait is over, and starts the count afresh.
    await t.call(anonymous, AuthService.method.login, { email, password });
    await expectCode(
      t.call(anonymous, AuthService.method.login, { email, password: "x" }),
      "unauthenticated",
    );
  });

  it("an unknown email is throttled exactly like a known one", async () => {
    const answers: string[] = [];
    for (const email of ["ghost@example.com", (await t.signUp("ada")).email]) {
      for (let i = 0; i < 5; i++) {
        await expectCode(
          t.call(anonymous, AuthService.method.login, { email, password: "nope" }),
          "unauthenticated",
        );
      }
      const e = await expectCode(
        t.call(anonymous, AuthService.method.login, { email, password: "nope" }),
        "resource_exhausted",
      );
      answers.push(e.message);
    }
    expect(answers[0]).toBe(answers[1]);
  });

  it("a burst of concurrent guesses gets no more than the free attempts checked", async () => {
    const { email } = await t.signUp("ada");
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) =>
        t.call(anonymous, AuthService.method.login, { email, password: `g${i}` }),
      ),
    );
    const codes = results.map((r) => (r.status === "rejected" ? (r.reason as { code: string }).code : "ok"));
    expect(codes.filter((c) => c === "unauthenticated")).toHaveLength(5);
    expect(codes.filter((c) => c === "resource_exhausted")).toHaveLength(15);
  });

  it("an address spraying many accounts is throttled too", async () => {
    const ip = "203.0.113.9";
    for (let i = 0; i < 50; i++) {
      await expectCode(loginFrom(ip, `victim${i}@example.com`, "Summer2026!"), "unauthenticated");
    }
    await expectCode(loginFrom(ip, "victim99@example.com", "Summer2026!"), "resource_exhausted");
    // Another address is not affected.
    await expectCode(loginFrom("203.0.113.10", "victim99@example.com", "Summer2026!"), "unauthenticated");
  });

  it("failures are forgotten after the longest backoff", async () => {
    const { email } = await t.signUp("ada");
    for (let i = 0; i < 5; i++) {
      await expectCode(
        t.call(anonymous, AuthService.method.login, { email, password: "nope" }),
        "unauthenticated",
      );
    }
    t.clock.advance(15 * 60 * 1000 + 1);
    for (let i = 0; i < 5; i++) {
      await expectCode(
        t.call(anonymous, AuthService.method.login, { email, password: "nope" }),
        "unauthenticated",
      );
    }
  });
});

describe("backup codes", () => {
  it("CreateBackupCodes returns ten codes once; each signs in exactly once", async () => {
    const { caller, email } = await t.signUp("ada");
    const { codes } = await t.call(caller, CredentialService.method.createBackupCodes, {});
    expect(codes).toHaveLength(10);
    for (const code of codes) expect(code).toMatch(/^[0-9a-hjkmnp-tv-z]{4}(-[0-9a-hjkmnp-tv-z]{4}){3}$/);
    expect(new Set(codes).size).toBe(10);
    const stored = await t.storage.backupCodes.listByUser(caller.userId);
    expect(stored.map((c) => c.codeHash)).not.toContain(codes[0]);

    const listed = await t.call(caller, CredentialService.method.listBackupCodes, {});
    expect(listed.codes).toHaveLength(10);
    expect(listed.codes.every((c) => c.usedAt === undefined && c.createdAt !== undefined)).toBe(true);
    expect(toJsonString(ListBackupCodesResponseSchema, listed)).not.toContain(codes[0]);

    // Typed loosely: upper case, no dashes, spaces.
    const typed = ` ${codes[3]!.toUpperCase().replaceAll("-", " ")} `;
    const tokens = await t.call(anonymous, AuthService.method.loginWithBackupCode, { email, code: typed });
    const { caller: signedIn } = await t.platform.authenticate({ bearer: tokens.accessToken });
    expect(signedIn).toMatchObject({ kind: "user", userId: caller.userId });
    await expectCode(
      t.call(anonymous, AuthService.method.loginWithBackupCode, { email, code: codes[3]! }),
      "unauthenticated",
    );
    const after = await t.call(caller, CredentialService.method.listBackupCodes, {});
    expect(after.codes.filter((c) => c.usedAt !== undefined)).toHaveLength(1);
  });

  it("a code races to exactly one sign-in", async () => {
    const { caller, email } = await t.signUp("ada");
    const { codes } = await t.call(caller, CredentialService.method.createBackupCodes, {});
    const results = await Promise.allSettled(
      Array.from({ length: 5 }, () =>
        t.call(anonymous, AuthService.method.loginWithBackupCode, { email, code: codes[0]! }),
      ),
    );
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
  });

  it("wrong codes, other users' codes and unknown emails get one answer", async () => {
    const ada = await t.signUp("ada");
    const bob = await t.signUp("bob");
    const { codes } = await t.call(bob.caller, CredentialService.method.createBackupCodes, {});
    const messages = new Set<string>();
    for (const [email, code] of [
      [ada.email, codes[0]!],
      [ada.email, "0000-0000-0000-0000"],
      ["nobody@example.com", codes[0]!],
    ] as const) {
      messages.add(
        (
          await expectCode(
            t.call(anonymous, AuthService.method.loginWithBackupCode, { email, code }),
            "unauthenticated",
          )
        ).message,
      );
    }
    expect(messages.size).toBe(1);
  });

  it("a new set replaces the old one; DeleteBackupCodes removes them", async () => {
    const { caller, email } = await t.signUp("ada");
    const first = await t.call(caller, CredentialService.method.createBackupCodes, {});
    const second = await t.call(caller, CredentialService.method.createBackupCodes, {});
    await expectCode(
      t.call(anonymous, AuthService.method.loginWithBackupCode, { email, code: first.codes[0]! }),
      "unauthenticated",
    );
    await t.call(caller, CredentialService.method.deleteBackupCodes, {});
    expect((await t.call(caller, CredentialService.method.listBackupCodes, {})).codes).toEqual([]);
    await expectCode(
      t.call(anonymous, AuthService.method.loginWithBackupCode, { email, code: second.codes[0]! }),
      "unauthenticated",
    );
  });

  it("guessing backup codes is throttled like passwords", async () => {
    const { caller, email } = await t.signUp("ada");
    const { codes } = await t.call(caller, CredentialService.method.createBackupCodes, {});
    for (let i = 0; i < 5; i++) {
      await expectCode(
        t.call(anonymous, AuthService.method.loginWithBackupCode, { email, code: `wrong-${i}` }),
        "unauthenticated",
      );
    }
    await expectCode(
      t.call(anonymous, AuthService.method.loginWithBackupCode, { email, code: codes[0]! }),
      "resource_exhausted",
    );
  });
});
