/**
 * The storage contract of memberships: round-trip, lookups, listing, uniqueness and tenant
 * isolation. Registered by `runStorageContract`.
 *
 * @module
 */
import { describe, expect } from "vitest";
import {
  accessAt,
  aMember,
  aTeam,
  at,
  aUser,
  type ContractContext,
  expectUnique,
  page,
  seedAccess,
  uid,
} from "./fixtures.js";

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

  soleOwnerships(ctx);
  profilesAndOwners(ctx);
}

function soleOwnerships(ctx: ContractContext): void {
  const { test, seedWorkspace } = ctx;

  const storage = () => ctx.storage();

  describe("accounts: users, sessions, members", () => {
    test("members: listSoleOwnerships names only workspaces with no other owner", async () => {
      const { user, workspace: alone } = await seedWorkspace();
      const shared = await seedWorkspace();
      await storage().members.insert(aMember(shared.workspace.id, user.id, { role: "owner" }));
      const asAdmin = await seedWorkspace();
      await storage().members.insert(aMember(asAdmin.workspace.id, user.id, { role: "admin" }));
      expect(await storage().members.listSoleOwnerships(user.id)).toEqual([alone.id]);
      expect(await storage().members.listSoleOwnerships(shared.user.id)).toEqual([]);
      expect(await storage().members.listSoleOwnerships(uid())).toEqual([]);
    });
  });
}

function profilesAndOwners(c: ContractContext): void {
  const { test } = c;

  const at = accessAt;

  const s = () => c.storage();

  describe("memberships", () => {
    test("memberships: profiles join the user; list filters, pages and totals", async () => {
      const { ws, user, guest, member } = await seedAccess(c);
      const profile = await s().members.findProfile(ws, guest.id);
      expect(profile?.member).toMatchObject({ workspaceId: ws, userId: guest.id, role: "viewer" });
      expect(profile?.user).toEqual({
        id: guest.id,
        name: guest.name,
        username: guest.username,
        email: guest.email,
        emailVerified: guest.emailVerified,
        picture: guest.picture,
      });
      expect(await s().members.findProfile(ws, uid())).toBeNull();

      const all = await s().members.listProfiles(ws, page);
      expect(all.total).toBe(2);
      expect(all.items.map((p) => p.user.id)).toEqual([user.id, guest.id]);
      expect(all.items[0]?.member).toEqual(member);
      const second = await s().members.listProfiles(ws, { limit: 1, offset: 1 });
      expect(second).toMatchObject({ total: 2 });
      expect(second.items.map((p) => p.user.id)).toEqual([guest.id]);
      // ASCII letters fold on every engine, in the name, username and email.
      for (const query of [
        guest.username.toUpperCase(),
        guest.email.slice(0, 12).toUpperCase(),
        "LOVELACE",
      ]) {
        const found = await s().members.listProfiles(ws, { ...page, query });
        expect(found.items.map((p) => p.user.id)).toContain(guest.id);
      }
      expect((await s().members.listProfiles(ws, { ...page, query: "%" })).total).toBe(0);
      expect((await s().members.listProfiles(ws, { ...page, role: "viewer" })).items).toHaveLength(1);
      expect((await s().members.listProfiles(ws, { ...page, role: "admin" })).total).toBe(0);
      expect((await s().members.listProfiles(uid(), page)).total).toBe(0);
    });

    test("memberships: a team filter keeps members of any of the teams", async () => {
      const { ws, user, guest } = await seedAccess(c);
      const red = aTeam(ws);
      const blue = aTeam(ws);
      await s().teams.insert(red);
      await s().teams.insert(blue);
      await s().teams.addMember(ws, red.id, guest.id, at(200));
      await s().teams.addMember(ws, blue.id, user.id, at(201));
      const ids = async (teamIds: string[]) =>
        (await s().members.listProfiles(ws, { ...page, teamIds })).items.map((p) => p.user.id);
      expect(await ids([red.id])).toEqual([guest.id]);
      expect(await ids([red.id, blue.id])).toEqual([user.id, guest.id]);
      expect(await ids([uid()])).toEqual([]);
    });

    test("memberships: changeRole and remove never take away the last owner", async () => {
      const { ws, user, guest } = await seedAccess(c);
      expect(await s().members.changeRole(ws, user.id, "admin", at(300))).toBe("last_owner");
      expect(await s().members.remove(ws, user.id)).toBe("last_owner");
      expect((await s().members.find(ws, user.id))?.role).toBe("owner");
      expect(await s().members.changeRole(ws, uid(), "viewer", at(300))).toBe("not_found");
      expect(await s().members.remove(ws, uid())).toBe("not_found");

      expect(await s().members.changeRole(ws, guest.id, "owner", at(301))).toBe("done");
      expect(await s().members.find(ws, guest.id)).toMatchObject({ role: "owner", updatedAt: at(301) });
      expect(await s().members.changeRole(ws, user.id, "editor", at(302))).toBe("done");
      expect(await s().members.remove(ws, guest.id)).toBe("last_owner");
      expect(await s().members.changeRole(ws, user.id, "owner", at(303))).toBe("done");
      expect(await s().members.remove(ws, guest.id)).toBe("done");
      expect(await s().members.find(ws, guest.id)).toBeNull();
    });

    test("memberships: racing demotions and removals of the owners leave one owner", async () => {
      for (let round = 0; round < 5; round++) {
        const { ws, user, guest } = await seedAccess(c);
        const third = aUser();
        await s().users.insert(third);
        await s().members.insert(aMember(ws, third.id, { role: "owner" }));
        await s().members.changeRole(ws, guest.id, "owner", at(400));
        // Three owners, each taken away by a different request at once (some in transactions).
        const results = await Promise.all([
          s().members.changeRole(ws, user.id, "viewer", at(401)),
          s().transaction((tx) => tx.members.remove(ws, guest.id)),
          s().members.remove(ws, third.id),
        ]);
        expect(results.filter((r) => r === "done")).toHaveLength(2);
        expect(results.filter((r) => r === "last_owner")).toHaveLength(1);
        const owners = (await s().members.listByWorkspace(ws)).filter((m) => m.role === "owner");
        expect(owners).toHaveLength(1);
      }
    });

    test("memberships: another workspace's member is not found and not changed", async () => {
      const a = await seedAccess(c);
      const b = await seedAccess(c);
      expect(await s().members.findProfile(a.ws, b.guest.id)).toBeNull();
      expect(await s().members.changeRole(a.ws, b.guest.id, "admin", at(500))).toBe("not_found");
      expect(await s().members.remove(a.ws, b.guest.id)).toBe("not_found");
      expect((await s().members.find(b.ws, b.guest.id))?.role).toBe("viewer");
    });
  });
}
