/**
 * The storage contract of teams: round-trips, filters, members, and members only of the team's
 * workspace. Registered by `runStorageContract`.
 *
 * @module
 */
import { describe, expect } from "vitest";
import { accessAt, aTeam, type ContractContext, expectUnique, page, seedAccess } from "./fixtures.js";

export function runTeamContract(ctx: ContractContext): void {
  teamRecords(ctx);
}

function teamRecords(c: ContractContext): void {
  const { test } = c;

  const at = accessAt;

  const s = () => c.storage();

  describe("teams", () => {
    test("teams: round-trip, filters, paging, update; names unique per workspace", async () => {
      const a = await seedAccess(c);
      const b = await seedAccess(c);
      const older = aTeam(a.ws, { name: "Équipe Ω", tags: ["eu", "ops"], createdAt: at(1) });
      const newer = aTeam(a.ws, { description: "Database Admins", tags: ["ops"], createdAt: at(2) });
      await s().teams.insert(newer);
      await s().teams.insert(older);
      expect(await s().teams.findById(a.ws, older.id)).toEqual(older);
      expect(await s().teams.findById(b.ws, older.id)).toBeNull();
      expect(await s().teams.list(a.ws, page)).toEqual({ items: [older, newer], total: 2 });
      expect((await s().teams.list(a.ws, { limit: 1, offset: 1 })).items).toEqual([newer]);
      expect((await s().teams.list(a.ws, { ...page, query: "équipe" })).items).toEqual([older]);
      expect((await s().teams.list(a.ws, { ...page, query: "DATABASE" })).items).toEqual([newer]);
      expect((await s().teams.list(a.ws, { ...page, tags: ["ops", "eu"] })).items).toEqual([older]);
      expect((await s().teams.list(b.ws, page)).total).toBe(0);
      await expectUnique(s().teams.insert(aTeam(a.ws, { name: older.name })), "teams.name");
      await s().teams.insert(aTeam(b.ws, { name: older.name }));
      const renamed = await s().teams.update(a.ws, older.id, { name: "renamed", tags: [] }, at(3, 3));
      expect(renamed).toEqual({ ...older, name: "renamed", tags: [], updatedAt: at(3, 3) });
      await expectUnique(s().teams.update(a.ws, newer.id, { name: "renamed" }, at(4)), "teams.name");
      expect(await s().teams.update(b.ws, older.id, { name: "stolen" }, at(5))).toBeNull();
      expect(await s().teams.delete(b.ws, older.id)).toBe(false);
      expect(await s().teams.delete(a.ws, older.id)).toBe(true);
      expect(await s().teams.findById(a.ws, older.id)).toBeNull();
    });

    test("teams: members are added once, listed with profiles, removed; teamsOf", async () => {
      const { ws, user, guest } = await seedAccess(c);
      const team = aTeam(ws);
      const other = aTeam(ws);
      await s().teams.insert(team);
      await s().teams.insert(other);
      expect(await s().teams.addMember(ws, team.id, guest.id, at(10))).toBe(true);
      expect(await s().teams.addMember(ws, team.id, guest.id, at(11))).toBe(false);
      expect(await s().teams.addMember(ws, team.id, user.id, at(12))).toBe(true);
      expect(await s().teams.addMember(ws, other.id, guest.id, at(13))).toBe(true);
      const members = await s().teams.listMembers(ws, [team.id]);
      expect(members.map((m) => [m.teamId, m.user.id])).toEqual([
        [team.id, guest.id],
        [team.id, user.id],
      ]);
      expect(members[0]?.user.email).toBe(guest.email);
      expect((await s().teams.listMembers(ws, [team.id, other.id])).length).toBe(3);
      expect(await s().teams.listMembers(ws, [])).toEqual([]);
      expect((await s().teams.teamsOf(ws, guest.id)).sort()).toEqual([team.id, other.id].sort());
      expect(await s().teams.removeMember(ws, team.id, guest.id)).toBe(true);
      expect(await s().teams.removeMember(ws, team.id, guest.id)).toBe(false);
      expect(await s().teams.teamsOf(ws, guest.id)).toEqual([other.id]);
    });

    test("teams: a team member must be a member of the team's workspace", async () => {
      const a = await seedAccess(c);
      const b = await seedAccess(c);
      const team = aTeam(a.ws);
      await s().teams.insert(team);
      await expect(s().teams.addMember(a.ws, team.id, b.guest.id, at(1))).rejects.toThrow();
      await expect(s().teams.addMember(b.ws, team.id, b.guest.id, at(1))).rejects.toThrow();
      expect(await s().teams.listMembers(a.ws, [team.id])).toEqual([]);
      expect(await s().teams.listMembers(b.ws, [team.id])).toEqual([]);
    });
  });
}
