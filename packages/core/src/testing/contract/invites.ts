/**
 * The storage contract of the invite link: one per workspace, found by hash, replaced and deleted.
 * Registered by `runStorageContract`.
 *
 * @module
 */
import { describe, expect } from "vitest";
import { accessAt, anInvite, type ContractContext, expectUnique, seedAccess } from "./fixtures.js";

export function runInviteContract(ctx: ContractContext): void {
  inviteLink(ctx);
}

function inviteLink(c: ContractContext): void {
  const { test } = c;

  const at = accessAt;

  const s = () => c.storage();

  describe("workspace settings and invite link", () => {
    test("invites: one per workspace; replace retires the old token; lookup by hash; delete", async () => {
      const a = await seedAccess(c);
      const b = await seedAccess(c);
      const first = anInvite(a.ws);
      await s().workspaceInvites.replace(first);
      expect(await s().workspaceInvites.find(a.ws)).toEqual(first);
      expect(await s().workspaceInvites.findByTokenHash(first.tokenHash)).toEqual(first);
      const second = anInvite(a.ws, { role: "editor", expiresAt: at(9000, 9) });
      await s().workspaceInvites.replace(second);
      expect(await s().workspaceInvites.findByTokenHash(first.tokenHash)).toBeNull();
      expect(await s().workspaceInvites.find(a.ws)).toEqual(second);
      await expectUnique(
        s().workspaceInvites.replace(anInvite(b.ws, { tokenHash: second.tokenHash })),
        "workspace_invites.token_hash",
      );
      expect(await s().workspaceInvites.find(b.ws)).toBeNull();
      expect(await s().workspaceInvites.delete(a.ws)).toBe(true);
      expect(await s().workspaceInvites.delete(a.ws)).toBe(false);
      expect(await s().workspaceInvites.findByTokenHash(second.tokenHash)).toBeNull();
    });
  });
}
