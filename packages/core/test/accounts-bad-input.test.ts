/**
 * Every rule of the contract on the account messages, through the operations, on both
 * sides of each bound (lengths count code points: astral characters are one each).
 */
import type { DescMessage, DescMethodUnary } from "@bufbuild/protobuf";
import { AuthService, CredentialService, UserService } from "@wap/api";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Caller } from "../src/context.js";
import { type AccountsPlatform, createAccountsPlatform } from "./support/accounts.js";
import { expectLengthRule, type LengthRule, violatedFieldsOf } from "./support/bounds.js";

let t: AccountsPlatform;
let user: Caller;
beforeAll(async () => {
  t = await createAccountsPlatform();
  user = (await t.signUp("prop")).caller;
});
afterAll(() => t.platform.close());

const anonymous: Caller = { kind: "anonymous" };

const violatedFields = violatedFieldsOf(() => t);

const usernameChars = fc.constantFrom("a", "Z", "7");
const rules: LengthRule[] = [
  {
    name: "Login.password >= 1",
    caller: () => anonymous,
    method: AuthService.method.login,
    field: "password",
    min: 1,
    request: (v) => ({ email: "prop-login@example.com", password: v }),
  },
  {
    name: "LoginWithBackupCode.code >= 1",
    caller: () => anonymous,
    method: AuthService.method.loginWithBackupCode,
    field: "code",
    min: 1,
    request: (v) => ({ email: "prop-code@example.com", code: v }),
  },
  {
    name: "ResetPassword.token >= 1",
    caller: () => anonymous,
    method: AuthService.method.resetPassword,
    field: "token",
    min: 1,
    request: (v) => ({ token: v, newPassword: "long enough" }),
  },
  {
    name: "ResetPassword.newPassword >= 8, no maximum",
    caller: () => anonymous,
    method: AuthService.method.resetPassword,
    field: "newPassword",
    min: 8,
    request: (v) => ({ token: "t", newPassword: v }),
  },
  {
    name: "VerifyCLILogin.loginCode >= 1",
    caller: () => user,
    method: AuthService.method.verifyCLILogin,
    field: "loginCode",
    min: 1,
    request: (v) => ({ loginCode: v, userCode: "BCDF-GHJK" }),
  },
  {
    name: "VerifyCLILogin.userCode 1-64 (our bound: the code the CLI shows is 9)",
    caller: () => user,
    method: AuthService.method.verifyCLILogin,
    field: "userCode",
    min: 1,
    max: 64,
    request: (v) => ({ loginCode: "0".repeat(32), userCode: v }),
  },
  {
    name: "UpdateProfile.name 3-256",
    caller: () => user,
    method: UserService.method.updateProfile,
    field: "name",
    min: 3,
    max: 256,
    request: (v) => ({ name: v }),
  },
  {
    name: "UpdateProfile.username 3-39",
    caller: () => user,
    method: UserService.method.updateProfile,
    field: "username",
    min: 3,
    max: 39,
    request: (v) => ({ username: v }),
    chars: usernameChars,
  },
  {
    name: "UnlinkAccount.provider >= 1",
    caller: () => user,
    method: UserService.method.unlinkAccount,
    field: "provider",
    min: 1,
    request: (v) => ({ provider: v }),
  },
  {
    name: "UpdatePassword.currentPassword >= 1",
    caller: () => user,
    method: CredentialService.method.updatePassword,
    field: "currentPassword",
    min: 1,
    request: (v) => ({ currentPassword: v, newPassword: "x" }),
  },
  {
    name: "UpdatePassword.newPassword >= 8, no maximum",
    caller: () => user,
    method: CredentialService.method.updatePassword,
    field: "newPassword",
    min: 8,
    request: (v) => ({ currentPassword: "wrong", newPassword: v }),
  },
  {
    name: "DeletePassword.currentPassword >= 1",
    caller: () => user,
    method: CredentialService.method.deletePassword,
    field: "currentPassword",
    min: 1,
    request: (v) => ({ currentPassword: v }),
  },
  {
    name: "UpdatePasskey.id >= 1",
    caller: () => user,
    method: CredentialService.method.updatePasskey,
    field: "id",
    min: 1,
    request: (v) => ({ id: v }),
  },
  {
    name: "UpdatePasskey.name 1-100",
    caller: () => user,
    method: CredentialService.method.updatePasskey,
    field: "name",
    min: 1,
    max: 100,
    request: (v) => ({ id: "x", name: v }),
  },
  {
    name: "DeletePasskey.id >= 1",
    caller: () => user,
    method: CredentialService.method.deletePasskey,
    field: "id",
    min: 1,
    request: (v) => ({ id: v }),
  },
  {
    name: "FinishPasskeyRegistration.name 1-100",
    caller: () => user,
    method: CredentialService.method.finishPasskeyRegistration,
    field: "name",
    min: 1,
    max: 100,
    request: (v) => ({ credentialJson: "{}", name: v }),
  },
  {
    name: "FinishPasskeyRegistration.credentialJson 1-65536",
    caller: () => user,
    method: CredentialService.method.finishPasskeyRegistration,
    field: "credentialJson",
    min: 1,
    max: 65_536,
    request: (v) => ({ credentialJson: v }),
    chars: fc.constantFrom("{", "}", "a"),
  },
  {
    name: "FinishPasskeyLogin.credentialJson 1-65536",
    caller: () => anonymous,
    method: AuthService.method.finishPasskeyLogin,
    field: "credentialJson",
    min: 1,
    max: 65_536,
    request: (v) => ({ credentialJson: v }),
    chars: fc.constantFrom("[", "]", "1"),
  },
];

describe("length rules, both sides of each bound", () => {
  for (const rule of rules) {
    it(rule.name, () => expectLengthRule(violatedFields, rule, 15));
  }
});

describe("emails: format and at most 256 characters", () => {
  const at256 = `${"a".repeat(64)}@${"b".repeat(60)}.${"c".repeat(60)}.${"d".repeat(60)}.${"e".repeat(8)}`;
  const cases: Array<
    [string, Caller | (() => Caller), DescMethodUnary<DescMessage, DescMessage>, (e: string) => object]
  > = [
    ["Login", anonymous, AuthService.method.login as never, (e) => ({ email: e, password: "x" })],
    [
      "LoginWithBackupCode",
      anonymous,
      AuthService.method.loginWithBackupCode as never,
      (e) => ({ email: e, code: "x" }),
    ],
    ["ForgotPassword", anonymous, AuthService.method.forgotPassword as never, (e) => ({ email: e })],
    ["ResendVerification", anonymous, AuthService.method.resendVerification as never, (e) => ({ email: e })],
    ["UpdateProfile", () => user, UserService.method.updateProfile as never, (e) => ({ email: e })],
  ];
  for (const [name, who, method, request] of cases) {
    it(name, async () => {
      const caller = typeof who === "function" ? who() : who;
      expect(at256).toHaveLength(256);
      expect(await violatedFields(caller, method, request(at256) as never)).not.toContain("email");
      expect(await violatedFields(caller, method, request(`a${at256}`) as never)).toContain("email");
      await fc.assert(
        fc.asyncProperty(fc.emailAddress({ size: "small" }), async (address) => {
          expect(await violatedFields(caller, method, request(address) as never)).not.toContain("email");
        }),
        { numRuns: 10 },
      );
      for (const bad of ["", "ada", "ada@", "@example.com", "a b@example.com"]) {
        expect(await violatedFields(caller, method, request(bad) as never)).toContain("email");
      }
    });
  }
});

describe("patterns and formats", () => {
  it("UpdateProfile.username starts and ends with a letter or digit; '-' and '_' inside only", async () => {
    const alnum = fc.constantFrom(..."aZ09");
    const inner = fc
      .array(fc.constantFrom(..."aZ09-_"), { minLength: 1, maxLength: 37 })
      .map((p) => p.join(""));
    await fc.assert(
      fc.asyncProperty(alnum, inner, alnum, async (first, middle, last) => {
        const ok = `${first}${middle}${last}`;
        expect(
          await violatedFields(user, UserService.method.updateProfile, { username: `-${ok.slice(1)}` }),
        ).toContain("username");
        expect(
          await violatedFields(user, UserService.method.updateProfile, { username: `${ok.slice(0, -1)}_` }),
        ).toContain("username");
        expect(
          await violatedFields(user, UserService.method.updateProfile, { username: `${ok.slice(0, -1)}.` }),
        ).toContain("username");
      }),
      { numRuns: 15 },
    );
  });

  it("DeleteUserDevice.id is a uuid", async () => {
    await fc.assert(
      fc.asyncProperty(fc.uuid(), async (id) => {
        expect(
          await violatedFields(user, UserService.method.deleteUserDevice, { id: id.toUpperCase() }),
        ).toEqual([]);
      }),
      { numRuns: 10 },
    );
    for (const bad of [
      "",
      "x",
      "00000000-0000-0000-0000-00000000000",
      "00000000-0000-0000-0000-0000000000000",
    ]) {
      expect(await violatedFields(user, UserService.method.deleteUserDevice, { id: bad })).toEqual(["id"]);
    }
  });

  it("UpdateProfile.picture is an https URL of at most 2048 characters (our bound: it is stored and shown)", async () => {
    const url = (length: number) => {
      const prefix = "https://cdn.example.com/";
      return `${prefix}${"p".repeat(length - prefix.length)}`;
    };
    expect(await violatedFields(user, UserService.method.updateProfile, { picture: url(2048) })).toEqual([]);
    expect(await violatedFields(user, UserService.method.updateProfile, { picture: url(2049) })).toEqual([
      "picture",
    ]);
    expect(await violatedFields(user, UserService.method.updateProfile, { picture: "p" })).toEqual([
      "picture",
    ]);
  });

  it("NUL characters are refused in every text field", async () => {
    expect(await violatedFields(user, UserService.method.updateProfile, { name: "Ada\u0000Byron" })).toEqual([
      "name",
    ]);
    expect(
      await violatedFields(user, CredentialService.method.updatePasskey, { id: "a", name: "k\u0000" }),
    ).toEqual(["name"]);
  });
});
