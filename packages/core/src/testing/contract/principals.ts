/**
 * The storage contract of principals and grants: uniqueness, filters, cascades and tenant
 * isolation. Registered by `runStorageContract`.
 *
 * @module
 */
import { describe, expect } from "vitest";
import {
  accessAt,
  anAccessTarget,
  aPrincipal,
  aServiceAccount,
  aTeam,
  type ContractContext,
  expectUnique,
  page,
  seedAccess,
  uid,
} from "./fixtures.js";

export function runPrincipalContract(ctx: ContractContext): void {
  grants(ctx);
}

function grants(c: ContractContext): void {
  const { test } = c;

  const at = accessAt;

  const s = () => c.storage();

  describe("principals and grants", () => {
    test("principals: round-trip, unique username per target, list filters and grants", async () => {
      const { ws, user, guest, ca, target } = await seedAccess(c);
      const second = anAccessTarget(ws, ca.id, { createdAt: at(21) });
      await s().targets.insert(second);
      const deploy = aPrincipal(ws, target.id, { username: "deploy" });
      const root = aPrincipal(ws, target.id, { username: "_root$" });
      const other = aPrincipal(ws, second.id, { username: "deploy" });
      for (const p of [deploy, root, other]) await s().principals.insert(p);
      expect(await s().principals.findById(ws, deploy.id)).toEqual(deploy);
      await expectUnique(
        s().principals.insert(aPrincipal(ws, target.id, { username: "deploy" })),
        "principals.username",
      );

      const team = aTeam(ws);
      await s().teams.insert(team);
      const account = aServiceAccount(ws);
      await s().serviceAccounts.insert(account);
      await s().principals.addSubjects(ws, deploy.id, "user", [guest.id, user.id], at(31));
      await s().principals.addSubjects(ws, deploy.id, "user", [guest.id], at(32));
      await s().principals.addSubjects(ws, deploy.id, "team", [team.id], at(33));
      await s().principals.addSubjects(ws, root.id, "service_account", [account.id], at(34));

      const byTarget = await s().principals.listByTargets(ws, [target.id]);
      expect(byTarget.map((p) => p.username)).toEqual(["_root$", "deploy"].sort());
      const grants = byTarget.find((p) => p.id === deploy.id);
      expect(grants).toEqual({
        ...deploy,
        userIds: expect.arrayContaining([guest.id, user.id]),
        teamIds: [team.id],
        serviceAccountIds: [],
        grants: expect.any(Array),
      });
      expect(grants?.userIds).toHaveLength(2);
      expect(grants?.grants.every((g) => g.kind === "standing")).toBe(true);

      const listed = await s().principals.list(ws, page);
      expect(listed.total).toBe(3);
      expect(
        (await s().principals.list(ws, { ...page, targetId: second.id })).items.map((p) => p.id),
      ).toEqual([other.id]);
      expect((await s().principals.list(ws, { ...page, query: "ROOT" })).items.map((p) => p.id)).toEqual([
        root.id,
      ]);
      expect(
        (await s().principals.list(ws, { ...page, subjectKind: "team" })).items.map((p) => p.id),
      ).toEqual([deploy.id]);
      expect(
        (await s().principals.list(ws, { ...page, subjectKind: "service_account" })).items.map((p) => p.id),
      ).toEqual([root.id]);
      expect((await s().principals.list(ws, { limit: 2, offset: 2 })).items).toHaveLength(1);
      expect(await s().principals.usernames(ws)).toEqual(["_root$", "deploy"].sort());

      expect(await s().principals.removeSubjects(ws, deploy.id, "user", [guest.id, uid()])).toBe(1);
      expect((await s().principals.grantedTo(ws, [{ kind: "user", id: guest.id }])).map((p) => p.id)).toEqual(
        [],
      );
      expect(
        (
          await s().principals.grantedTo(ws, [
            { kind: "team", id: team.id },
            { kind: "service_account", id: account.id },
          ])
        )
          .map((p) => p.id)
          .sort(),
      ).toEqual([deploy.id, root.id].sort());
      expect(await s().principals.removeSubjectEverywhere(ws, { kind: "team", id: team.id })).toBe(1);
      expect(await s().principals.delete(ws, root.id)).toBe(true);
      expect(await s().principals.delete(ws, root.id)).toBe(false);
    });

    test("principals: grant limits round-trip with grants of each kind, and a new grant replaces them", async () => {
      const { ws, user, guest, target } = await seedAccess(c);
      const p = aPrincipal(ws, target.id);
      await s().principals.insert(p);
      const limits = {
        pinClientAddress: true,
        sourceCidrs: ["10.0.0.0/8", "2001:db8::/32"],
        permitPortForwarding: false,
        permitAgentForwarding: true,
        permitX11Forwarding: false,
        permitPty: true,
        verifyRequired: true,
        skKeysOnly: false,
        commands: ["uptime", "systemctl status nginx"],
      };
      await s().principals.addSubjects(ws, p.id, "user", [user.id], at(1), { kind: "standing", limits });
      // On request rather than time-bound: the sweep of lapsed grants in another test is global.
      const approval = {
        maxDurationSeconds: 600,
        approverRoles: ["admin"],
        approverTeamIds: [],
        approvalsRequired: 1,
        reasonRequired: false,
      };
      await s().principals.addSubjects(ws, p.id, "user", [guest.id], at(2), {
        kind: "on_request",
        approval,
        limits: { ...limits, commands: [] },
      });
      let [listed] = await s().principals.listByTargets(ws, [target.id]);
      expect(listed?.grants).toEqual([
        { kind: "standing", limits, subject: { kind: "user", id: user.id }, createdAt: at(1) },
        {
          kind: "on_request",
          approval,
          limits: { ...limits, commands: [] },
          subject: { kind: "user", id: guest.id },
          createdAt: at(2),
        },
      ]);
      // Granted again without limits: the grant has none.
      await s().principals.addSubjects(ws, p.id, "user", [user.id], at(3));
      [listed] = await s().principals.listByTargets(ws, [target.id]);
      expect(listed?.grants[0]).toEqual({
        kind: "standing",
        subject: { kind: "user", id: user.id },
        createdAt: at(1),
      });
    });

    test("principals: grant terms round-trip, are replaced by a new grant, and lapsed time-bound grants are removed", async () => {
      const { ws, user, guest, target } = await seedAccess(c);
      const p = aPrincipal(ws, target.id);
      await s().principals.insert(p);
      const approval = {
        maxDurationSeconds: 3600,
        approverRoles: ["admin", "owner"],
        approverTeamIds: [],
        approvalsRequired: 2,
        reasonRequired: true,
      };
      await s().principals.addSubjects(ws, p.id, "user", [user.id], at(1), { kind: "on_request", approval });
      await s().principals.addSubjects(ws, p.id, "user", [guest.id], at(2), {
        kind: "time_bound",
        validUntil: at(10),
      });
      let [listed] = await s().principals.listByTargets(ws, [target.id]);
      expect(listed?.grants).toEqual([
        { kind: "on_request", approval, subject: { kind: "user", id: user.id }, createdAt: at(1) },
        { kind: "time_bound", validUntil: at(10), subject: { kind: "user", id: guest.id }, createdAt: at(2) },
      ]);
      expect(await s().principals.removeLapsed(at(9))).toEqual([]);
      expect(await s().principals.removeLapsed(at(10))).toEqual([
        { workspaceId: ws, principalId: p.id, grant: listed!.grants[1] },
      ]);
      // A second grant of the same subject takes the new terms and keeps its creation time.
      await s().principals.addSubjects(ws, p.id, "user", [user.id], at(11));
      [listed] = await s().principals.listByTargets(ws, [target.id]);
      expect(listed?.grants).toEqual([
        { kind: "standing", subject: { kind: "user", id: user.id }, createdAt: at(1) },
      ]);
      expect(await s().principals.removeLapsed(at(100))).toEqual([]);
    });

    test("principals: grants follow their subjects and targets away (cascades)", async () => {
      const { ws, guest, ca, target } = await seedAccess(c);
      const p = aPrincipal(ws, target.id);
      await s().principals.insert(p);
      const team = aTeam(ws);
      await s().teams.insert(team);
      const account = aServiceAccount(ws);
      await s().serviceAccounts.insert(account);
      await s().teams.addMember(ws, team.id, guest.id, at(1));
      await s().principals.addSubjects(ws, p.id, "user", [guest.id], at(2));
      await s().principals.addSubjects(ws, p.id, "team", [team.id], at(3));
      await s().principals.addSubjects(ws, p.id, "service_account", [account.id], at(4));

      expect(await s().members.remove(ws, guest.id)).toBe("done");
      expect(await s().teams.listMembers(ws, [team.id])).toEqual([]);
      let [grants] = await s().principals.listByTargets(ws, [target.id]);
      expect(grants).toMatchObject({ userIds: [], teamIds: [team.id], serviceAccountIds: [account.id] });
      await s().teams.delete(ws, team.id);
      await s().serviceAccounts.delete(ws, account.id);
      [grants] = await s().principals.listByTargets(ws, [target.id]);
      expect(grants).toMatchObject({ userIds: [], teamIds: [], serviceAccountIds: [] });

      expect(await s().targets.delete(ws, target.id)).toBe(true);
      expect(await s().principals.findById(ws, p.id)).toBeNull();
      expect(await s().principals.usernames(ws)).toEqual([]);
      expect(await s().certificateAuthorities.findById(ws, ca.id)).not.toBeNull();
    });

    test("principals: subjects and targets of another workspace cannot be granted or read", async () => {
      const a = await seedAccess(c);
      const b = await seedAccess(c);
      const p = aPrincipal(a.ws, a.target.id);
      await s().principals.insert(p);
      await expect(s().principals.insert(aPrincipal(a.ws, b.target.id))).rejects.toThrow();
      await expect(s().principals.addSubjects(a.ws, p.id, "user", [b.guest.id], at(1))).rejects.toThrow();
      const account = aServiceAccount(b.ws);
      await s().serviceAccounts.insert(account);
      await expect(
        s().principals.addSubjects(a.ws, p.id, "service_account", [account.id], at(1)),
      ).rejects.toThrow();
      await expect(s().principals.addSubjects(b.ws, p.id, "user", [b.guest.id], at(1))).rejects.toThrow();
      expect(await s().principals.findById(b.ws, p.id)).toBeNull();
      expect(await s().principals.delete(b.ws, p.id)).toBe(false);
      expect(await s().principals.listByTargets(b.ws, [a.target.id])).toEqual([]);
      expect((await s().principals.list(b.ws, page)).total).toBe(0);
      expect(await s().principals.removeSubjects(b.ws, p.id, "user", [a.guest.id])).toBe(0);
      const [grants] = await s().principals.listByTargets(a.ws, [a.target.id]);
      expect(grants).toMatchObject({ userIds: [], teamIds: [], serviceAccountIds: [] });
    });
  });
}
