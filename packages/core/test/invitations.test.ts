/**
 * InvitationService: the shared invite link is random, kept hashed, expires, is single-purpose,
 * previews publicly and admits signed-in users as viewers.
 */
import { createHash } from "node:crypto";
import { AuthService, InvitationService, WorkspaceService } from "@wap/api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { memberWithRole, type Owner, serviceAccountCaller } from "./support/access.js";
import { createTestPlatform, expectCode, type TestPlatform } from "./support.js";

let t: TestPlatform;
let ada: Owner;
beforeEach(async () => {
  t = await createTestPlatform({ config: { publicBaseUrl: "https://wap.example.test/" } });
  ada = await t.owner();
});
afterEach(() => t.platform.close());

const anonymous = { kind: "anonymous" } as const;
const refresh = () =>
  t.call(ada.caller, InvitationService.method.refreshInviteToken, { workspaceId: ada.workspaceId });
const tokenOf = (link: string) => decodeURIComponent(link.slice(link.lastIndexOf("/") + 1));

describe("invite links", () => {
  it("are random, kept only as a hash, and expire after the workspace's invite expiry (7 days by default)", async () => {
    const first = await refresh();
    const second = await refresh();
    expect(first.link).toMatch(/^https:\/\/wap\.example\.test\/invites\/wapinv_[A-Za-z0-9_-]{43}$/);
    expect(tokenOf(first.link)).not.toBe(tokenOf(second.link));
    const stored = await t.storage.workspaceInvites.find(ada.workspaceId);
    expect(stored?.tokenHash).toBe(createHash("sha256").update(tokenOf(second.link)).digest("hex"));
    expect(JSON.stringify(stored)).not.toContain(tokenOf(second.link));
    expect(Number(second.expiresAt!.seconds) * 1000).toBe(t.clock.now().getTime() + 7 * 24 * 3600_000);
    // The previous link stopped working when the new one was made.
    await expectCode(
      t.call(anonymous, InvitationService.method.getInvitation, { token: tokenOf(first.link) }),
      "not_found",
    );
  });

  it("preview publicly, then admit a signed-in user as a viewer", async () => {
    await t.call(ada.caller, WorkspaceService.method.updateWorkspace, {
      workspaceId: ada.workspaceId,
      description: "our fleet",
    });
    const { link, expiresAt } = await refresh();
    const preview = await t.call(anonymous, InvitationService.method.getInvitation, { token: tokenOf(link) });
    expect(preview).toMatchObject({
      workspaceName: `ws of ${ada.email}`,
      workspaceDescription: "our fleet",
      expiresAt,
    });
    await expectCode(
      t.call(anonymous, InvitationService.method.acceptInvitation, { token: tokenOf(link) }),
      "unauthenticated",
    );
    const bob = await t.signUp();
    const joined = await t.call(bob.caller, InvitationService.method.acceptInvitation, {
      token: tokenOf(link),
    });
    expect(joined.workspaceId).toBe(ada.workspaceId);
    expect((await t.storage.members.find(ada.workspaceId, bob.caller.userId))?.role).toBe("viewer");
    // Shared: a second person joins with the same link; a member accepting again keeps their role.
    const cy = await t.signUp();
    await t.call(cy.caller, InvitationService.method.acceptInvitation, { token: tokenOf(link) });
    await t.call(ada.caller, InvitationService.method.acceptInvitation, { token: tokenOf(link) });
    expect((await t.storage.members.find(ada.workspaceId, ada.caller.userId))?.role).toBe("owner");
    const { items } = await t.storage.auditEvents.list(ada.workspaceId, { limit: 10, offset: 0 });
    expect(items.filter((e) => e.action === "invitation.accept")).toHaveLength(2);
  });

  it("are not_found alike when unknown, expired or revoked", async () => {
    const bob = await t.signUp();
    const messages: string[] = [];
    const fail = async (token: string) => {
      messages.push(
        (await expectCode(t.call(anonymous, InvitationService.method.getInvitation, { token }), "not_found"))
          .message,
      );
      messages.push(
        (
          await expectCode(
            t.call(bob.caller, InvitationService.method.acceptInvitation, { token }),
            "not_found",
          )
        ).message,
      );
    };
    await fail("wapinv_nonsense");
    const { link } = await refresh();
    t.clock.advance(7 * 24 * 3600_000);
    await fail(tokenOf(link));
    const fresh = await refresh();
    await t.call(ada.caller, InvitationService.method.revokeInviteToken, { workspaceId: ada.workspaceId });
    await fail(tokenOf(fresh.link));
    expect(new Set(messages).size).toBe(1);
    expect(await t.storage.members.find(ada.workspaceId, bob.caller.userId)).toBeNull();
    expect((await t.storage.workspaces.findById(ada.workspaceId))?.inviteExpiresAt).toBeNull();
    // Revoking again is fine.
    await t.call(ada.caller, InvitationService.method.revokeInviteToken, { workspaceId: ada.workspaceId });
  });

  it("are single-purpose: an invite token is no reset or verification token", async () => {
    const { link } = await refresh();
    const reset = await t
      .call(anonymous, AuthService.method.resetPassword, {
        token: tokenOf(link),
        newPassword: "another long password",
      })
      .catch((e: unknown) => e);
    expect(reset).toMatchObject({
      code: expect.stringMatching(/invalid_argument|not_found|unauthenticated/),
    });
    const verify = await t
      .call(anonymous, AuthService.method.verifyEmail, { token: tokenOf(link) })
      .catch((e: unknown) => e);
    expect(verify).toMatchObject({
      code: expect.stringMatching(/invalid_argument|not_found|unauthenticated/),
    });
  });

  it("are made and revoked by admins only", async () => {
    for (const role of ["editor", "viewer"] as const) {
      const member = await memberWithRole(t, ada.workspaceId, role);
      await expectCode(
        t.call(member.caller, InvitationService.method.refreshInviteToken, { workspaceId: ada.workspaceId }),
        "permission_denied",
      );
    }
    const robot = await serviceAccountCaller(t, ada, "editor");
    await expectCode(
      t.call(robot, InvitationService.method.revokeInviteToken, { workspaceId: ada.workspaceId }),
      "permission_denied",
    );
    const admin = await memberWithRole(t, ada.workspaceId, "admin");
    await t.call(admin.caller, InvitationService.method.refreshInviteToken, { workspaceId: ada.workspaceId });
  });
});
