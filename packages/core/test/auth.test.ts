import { AuthService, UserService } from "@wap/api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createTestPlatform, expectCode, type TestPlatform } from "./support.js";

const anonymous = { kind: "anonymous" } as const;
let t: TestPlatform;
beforeEach(async () => {
  t = await createTestPlatform();
});
afterEach(() => t.platform.close());

describe("Register and Login", () => {
  it("signs a new user in and Whoami returns them", async () => {
    const { caller, email } = await t.signUp("ada", { verified: false });
    const { user } = await t.call(caller, UserService.method.whoami, {});
    expect(user).toMatchObject({ username: "ada", email, name: "ada Test", emailVerified: false });
    const stored = await t.storage.users.findByEmail(email);
    expect(stored?.passwordHash).toMatch(/^\$argon2id\$/);
  });

  it("answers a second registration of the same email like a first, and changes nothing", async () => {
    await t.signUp("ada");
    const before = await t.storage.users.findByEmail("ada@example.com");
    const res = await t.call(anonymous, AuthService.method.register, {
      name: "Mallory",
      email: "ADA@example.com",
      username: "mallory",
      password: "another password",
    });
    expect(res).toEqual(expect.objectContaining({}));
    expect(await t.storage.users.findByEmail("ada@example.com")).toEqual(before);
    expect(await t.storage.users.findByUsername("mallory")).toBeNull();
  });

  it("refuses a taken username with already_exists", async () => {
    await t.signUp("ada");
    await expectCode(
      t.call(anonymous, AuthService.method.register, {
        name: "Ada Two",
        email: "ada2@example.com",
        username: "ada",
        password: "password123",
      }),
      "already_exists",
    );
  });

  it("rejects missing and out-of-bound fields with invalid_argument naming the field", async () => {
    const error = await expectCode(
      t.call(anonymous, AuthService.method.register, {
        name: "Al",
        email: "al@example.com",
        username: "al_",
        password: "short",
      }),
      "invalid_argument",
    );
    expect(error.violations.map((v) => v.field).sort()).toEqual(["name", "password", "username"]);
    const missing = await expectCode(t.call(anonymous, AuthService.method.register, {}), "invalid_argument");
    expect(missing.message).toContain("email: is required");
  });

  it("gives the same answer for a wrong password and an unknown email", async () => {
    await t.signUp("ada");
    const wrong = await expectCode(
      t.call(anonymous, AuthService.method.login, { email: "ada@example.com", password: "nope nope nope" }),
      "unauthenticated",
    );
    const unknown = await expectCode(
      t.call(anonymous, AuthService.method.login, {
        email: "nobody@example.com",
        password: "nope nope nope",
      }),
      "unauthenticated",
    );
    expect(wrong.message).toBe(unknown.message);
  });
});

describe("sessions", () => {
  it("rotates refresh tokens; reusing a spent one ends the session", async () => {
    const { tokens } = await t.signUp("ada");
    const first = await t.call(anonymous, AuthService.method.refreshToken, {
      refreshToken: tokens.refreshToken,
    });
    expect(first.refreshToken).not.toBe(tokens.refreshToken);
    expect((await t.platform.authenticate({ bearer: first.accessToken })).caller.kind).toBe("user");

    await expectCode(
      t.call(anonymous, AuthService.method.refreshToken, { refreshToken: tokens.refreshToken }),
      "unauthenticated",
    );
    // The whole family is gone: the newest refresh token and every access token of the session.
    await expectCode(
      t.call(anonymous, AuthService.method.refreshToken, { refreshToken: first.refreshToken }),
      "unauthenticated",
    );
    await expectCode(t.platform.authenticate({ bearer: first.accessToken }), "unauthenticated");
  });

  it("exactly one of many concurrent refreshes with the same token wins", async () => {
    const { tokens } = await t.signUp("ada");
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, () =>
        t.call(anonymous, AuthService.method.refreshToken, { refreshToken: tokens.refreshToken }),
      ),
    );
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
  });

  it("Logout ends the session at once", async () => {
    const { caller, tokens } = await t.signUp("ada");
    await t.call(caller, AuthService.method.logout, {});
    await expectCode(t.platform.authenticate({ bearer: tokens.accessToken }), "unauthenticated");
    await expectCode(
      t.call(anonymous, AuthService.method.refreshToken, { refreshToken: tokens.refreshToken }),
      "unauthenticated",
    );
  });

  it("access tokens expire after their lifetime", async () => {
    const { tokens } = await t.signUp("ada");
    t.clock.advance(15 * 60 * 1000 + 1000);
    await expectCode(t.platform.authenticate({ bearer: tokens.accessToken }), "unauthenticated");
  });

  it("refuses garbage credentials instead of treating them as anonymous", async () => {
    await expectCode(t.platform.authenticate({ bearer: "v4.public.garbage" }), "unauthenticated");
    await expectCode(t.platform.authenticate({ sessionCookie: "nope" }), "unauthenticated");
    await expectCode(
      t.platform.authenticate({ bearer: `wapsa_00000000-0000-0000-0000-000000000000_${"0".repeat(64)}` }),
      "unauthenticated",
    );
    expect((await t.platform.authenticate({})).caller.kind).toBe("anonymous");
  });

  it("operations that need a user refuse anonymous callers", async () => {
    await expectCode(t.call(anonymous, UserService.method.whoami, {}), "unauthenticated");
  });
});
