import { AuthService, CredentialService, UserService, WorkspaceService } from "@wap/api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type AccountsPlatform, createAccountsPlatform, linkParam, settle } from "./support/accounts.js";
import { expectCode } from "./support.js";

const anonymous = { kind: "anonymous" } as const;
let t: AccountsPlatform;
beforeEach(async () => {
  t = await createAccountsPlatform();
});
afterEach(() => t.platform.close());

describe("UpdateProfile", () => {
  it("changes only the fields sent", async () => {
    const { caller } = await t.signUp("ada");
    t.clock.advance(1000);
    const { user, emailSent } = await t.call(caller, UserService.method.updateProfile, {
      name: "Ada Lovelace",
      picture: "https://example.com/ada.png",
    });
    expect(user).toMatchObject({
      name: "Ada Lovelace",
      username: "ada",
      picture: "https://example.com/ada.png",
    });
    expect(user?.updatedAt).not.toEqual(user?.createdAt);
    expect(emailSent).toBe(false);
    const renamed = await t.call(caller, UserService.method.updateProfile, {
      username: "countess-of-lovelace_1",
    });
    expect(renamed.user).toMatchObject({ name: "Ada Lovelace", username: "countess-of-lovelace_1" });
    const unchanged = await t.call(caller, UserService.method.updateProfile, {});
    expect(unchanged.user).toEqual(renamed.user);
  });

  it("a taken username is already_exists", async () => {
    await t.signUp("bob");
    const { caller } = await t.signUp("ada");
    await expectCode(t.call(caller, UserService.method.updateProfile, { username: "bob" }), "already_exists");
  });

  it("a new email takes effect only after its link is followed", async () => {
    const { caller, email } = await t.signUp("ada");
    await t.mail.next(email);
    const { user, emailSent } = await t.call(caller, UserService.method.updateProfile, {
      email: "Ada@New.Example",
    });
    expect(emailSent).toBe(true);
    expect(user?.email).toBe(email);
    const mail = await t.mail.next("ada@new.example");
    expect(mail.subject).toMatch(/new email address/);
    await t.call(anonymous, AuthService.method.verifyEmail, { token: linkParam(mail, "token") });
    const after = await t.call(caller, UserService.method.whoami, {});
    expect(after.user).toMatchObject({ email: "ada@new.example", emailVerified: true });
    await t.call(anonymous, AuthService.method.login, {
      email: "ada@new.example",
      password: "correct horse battery",
    });
  });

  it("moving to an address that has an account answers the same and mails nobody", async () => {
    const bob = await t.signUp("bob");
    const { caller, email } = await t.signUp("ada");
    await t.mail.next(bob.email);
    await t.mail.next(email);
    const taken = await t.call(caller, UserService.method.updateProfile, { email: bob.email });
    t.clock.advance(61_000);
    const free = await t.call(caller, UserService.method.updateProfile, { email: "free@example.com" });
    expect(taken.emailSent).toBe(free.emailSent);
    await t.mail.next("free@example.com");
    await settle();
    expect(t.mail.sent).toHaveLength(0);
  });
});

describe("linked accounts", () => {
  it("lists the caller's links and unlinks by provider", async () => {
    const { caller } = await t.signUp("ada");
    const at = t.clock.now();
    await t.storage.linkedAccounts.insert({
      userId: caller.userId,
      provider: "github",
      providerId: "583231",
      providerEmail: "ada@users.noreply.github.com",
      providerUsername: "ada",
      protocol: "oauth",
      createdAt: at,
    });
    const { accounts } = await t.call(caller, UserService.method.listLinkedAccounts, {});
    expect(accounts).toEqual([
      expect.objectContaining({
        provider: "github",
        providerId: "583231",
        protocol: "oauth",
        providerUsername: "ada",
      }),
    ]);
    await expectCode(t.call(caller, UserService.method.unlinkAccount, { provider: "gitlab" }), "not_found");
    await t.call(caller, UserService.method.unlinkAccount, { provider: "github" });
    expect((await t.call(caller, UserService.method.listLinkedAccounts, {})).accounts).toEqual([]);
  });

  it("refuses to unlink the only way to sign in", async () => {
    const { caller } = await t.signUp("ada");
    await t.storage.users.update(caller.userId, { passwordHash: null }, t.clock.now());
    await t.storage.linkedAccounts.insert({
      userId: caller.userId,
      provider: "google",
      providerId: "g-1",
      providerEmail: "ada@example.com",
      providerUsername: "",
      protocol: "oidc",
      createdAt: t.clock.now(),
    });
    await expectCode(
      t.call(caller, UserService.method.unlinkAccount, { provider: "google" }),
      "failed_precondition",
    );
  });
});

describe("DeleteAccount", () => {
  it("is refused while the user alone owns a workspace", async () => {
    const { caller, workspaceId } = await t.owner();
    const error = await expectCode(
      t.call(caller, UserService.method.deleteAccount, {}),
      "failed_precondition",
    );
    expect(error.reason).toBe("SOLE_WORKSPACE_OWNER");
    expect(error.message).toContain(workspaceId);
  });

  it("removes the account with its memberships, credentials, devices and sessions", async () => {
    const owner = await t.owner();
    const { caller, email, tokens } = await t.signUp("ada");
    await t.storage.members.insert({
      workspaceId: owner.workspaceId,
      userId: caller.userId,
      role: "editor",
      createdAt: t.clock.now(),
      updatedAt: t.clock.now(),
    });
    await t.call(caller, CredentialService.method.createBackupCodes, {});
    await t.call(caller, UserService.method.deleteAccount, {});

    expect(await t.storage.users.findById(caller.userId)).toBeNull();
    expect(await t.storage.members.find(owner.workspaceId, caller.userId)).toBeNull();
    expect(await t.storage.backupCodes.listByUser(caller.userId)).toEqual([]);
    await expectCode(t.platform.authenticate({ bearer: tokens.accessToken }), "unauthenticated");
    await expectCode(
      t.call(anonymous, AuthService.method.login, { email, password: "correct horse battery" }),
      "unauthenticated",
    );
    // The workspace it was a member of carries on.
    await t.call(owner.caller, WorkspaceService.method.getWorkspace, { workspaceId: owner.workspaceId });
    // The address is free again.
    await t.call(anonymous, AuthService.method.register, {
      name: "Ada Again",
      email,
      username: "ada",
      password: "correct horse battery",
    });
    expect(await t.storage.users.findByEmail(email)).not.toBeNull();
  });
});
