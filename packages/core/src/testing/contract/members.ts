/**
 * The storage contract of memberships: round-trip, lookups, listing, uniqueness and tenant
 * isolation. Registered by `runStorageContract`.
 *
 * @module
 */
import { describe, expect } from "vitest";
import { aMember, at, aUser, type ContractContext, expectUnique, uid } from "./fixtures.js";

export function runMemberContract(ctx: ContractContext): void {
  const { test, seedWorkspace } = ctx;
  const storage = () => ctx.storage();

  describe("members", () => {
    test("members: round-trip, find, list oldest first, not found, duplicate", async () => {
      const { workspace, member } = await seedWorkspace();
      const second = aUser();
      await storage().users.insert(second);
      const secondMember = aMember(workspace.id, second.id, { role: "viewer", createdAt: at(5000, 1) });
      await storage().members.insert(secondMember);
      expect(await storage().members.find(workspace.id, member.userId)).toEqual(member);
      expect(await storage().members.find(workspace.id, second.id)).toEqual(secondMember);
      expect(await storage().members.listByWorkspace(workspace.id)).toEqual([member, secondMember]);
      expect(await storage().members.find(workspace.id, uid())).toBeNull();
      expect(await storage().members.listByWorkspace(uid())).toEqual([]);
      await expectUnique(
        storage().members.insert(aMember(workspace.id, second.id, { role: "admin" })),
        "workspace_members.user_id",
      );
      expect(await storage().members.find(workspace.id, second.id)).toEqual(secondMember);
    });

    test("members: another workspace's id finds nothing", async () => {
      const a = await seedWorkspace();
      const b = await seedWorkspace();
      expect(await storage().members.find(b.workspace.id, a.user.id)).toBeNull();
      expect(await storage().members.listByWorkspace(b.workspace.id)).toEqual([b.member]);
    });
  });
}
