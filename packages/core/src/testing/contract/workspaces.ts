/**
 * The storage contract of workspaces: round-trips, patches, listing by member, deletion and its
 * cascades. Registered by `runStorageContract`.
 *
 * @module
 */
import { describe, expect } from "vitest";
import {
  accessAt,
  aDaemon,
  aDomain,
  aMember,
  anAuditEvent,
  anAuthority,
  anInvite,
  anIssued,
  aPrincipal,
  aRetiredKey,
  aServiceAccount,
  aSession,
  aTeam,
  at,
  aUser,
  aWebTarget,
  aWorkspace,
  type ContractContext,
  certificateAt,
  expectUnique,
  seedAccess,
  seedAuthority,
  uid,
} from "./fixtures.js";

export function runWorkspaceContract(ctx: ContractContext): void {
  const { test, seedWorkspace } = ctx;
  const storage = () => ctx.storage();

  describe("workspaces", () => {
    test("workspaces: every field round-trips, with and without the optional dates", async () => {
      const user = aUser();
      await storage().users.insert(user);
      const plain = aWorkspace(user.id, { description: "" });
      const full = aWorkspace(user.id, {
        name: "Équipe Ω 🚀",
        enrollAutoApprove: true,
        enrollExpiresAt: at(1000, 999),
        inviteExpiresAt: new Date(-1), // before the epoch, to the millisecond
      });
      await storage().workspaces.insert(plain);
      await storage().workspaces.insert(full);
      expect(await storage().workspaces.findById(plain.id)).toEqual(plain);
      expect(await storage().workspaces.findById(full.id)).toEqual(full);
      expect(await storage().workspaces.findById(uid())).toBeNull();
    });

    test("workspaces: duplicate id throws UniqueViolationError", async () => {
      const { workspace, user } = await seedWorkspace();
      await expectUnique(
        storage().workspaces.insert(aWorkspace(user.id, { id: workspace.id })),
        "workspaces.id",
      );
      expect(await storage().workspaces.findById(workspace.id)).toEqual(workspace);
    });

    test("workspaces: update changes only the given fields; null clears; unknown id is null", async () => {
      const { workspace } = await seedWorkspace();
      const withDates = await storage().workspaces.update(
        workspace.id,
        { enrollExpiresAt: at(2000, 1), inviteExpiresAt: at(3000, 2), enrollAutoApprove: true },
        at(100, 5),
      );
      expect(withDates).toEqual({
        ...workspace,
        enrollExpiresAt: at(2000, 1),
        inviteExpiresAt: at(3000, 2),
        enrollAutoApprove: true,
        updatedAt: at(100, 5),
      });
      const renamed = await storage().workspaces.update(
        workspace.id,
        { name: "renamed", description: "", enrollExpiresAt: null },
        at(200, 6),
      );
      expect(renamed).toEqual({
        ...workspace,
        name: "renamed",
        description: "",
        enrollAutoApprove: true,
        enrollExpiresAt: null,
        inviteExpiresAt: at(3000, 2),
        updatedAt: at(200, 6),
      });
      expect(await storage().workspaces.findById(workspace.id)).toEqual(renamed);
      expect(await storage().workspaces.update(uid(), { name: "x" }, at(1))).toBeNull();
    });

    test("workspaces: listForUser returns the user's workspaces, oldest first", async () => {
      const user = aUser();
      const other = aUser();
      await storage().users.insert(user);
      await storage().users.insert(other);
      const newer = aWorkspace(user.id, { createdAt: at(500) });
      const older = aWorkspace(user.id, { createdAt: at(400) });
      const notMine = aWorkspace(other.id);
      for (const w of [newer, older, notMine]) await storage().workspaces.insert(w);
      await storage().members.insert(aMember(newer.id, user.id));
      await storage().members.insert(aMember(older.id, user.id));
      await storage().members.insert(aMember(notMine.id, other.id));
      expect(await storage().workspaces.listForUser(user.id)).toEqual([older, newer]);
      expect(await storage().workspaces.listForUser(uid())).toEqual([]);
    });

    test("workspaces: delete returns true once, then false", async () => {
      const { workspace } = await seedWorkspace();
      expect(await storage().workspaces.delete(workspace.id)).toBe(true);
      expect(await storage().workspaces.findById(workspace.id)).toBeNull();
      expect(await storage().workspaces.delete(workspace.id)).toBe(false);
    });

    test("workspaces: delete removes everything in the workspace and nothing else", async () => {
      const seed = async () => {
        const { user, workspace, member } = await seedWorkspace();
        const guest = aUser();
        await storage().users.insert(guest);
        await storage().members.insert(aMember(workspace.id, guest.id, { role: "viewer" }));
        const ca = anAuthority(workspace.id, { isDefault: true });
        await storage().certificateAuthorities.insert(ca);
        const account = aServiceAccount(workspace.id);
        await storage().serviceAccounts.insert(account);
        const daemon = aDaemon(workspace.id);
        await storage().daemons.insert(daemon);
        await storage().auditEvents.append(anAuditEvent(workspace.id));
        await storage().auditEvents.append(anAuditEvent(workspace.id));
        const session = aSession(user.id);
        await storage().authSessions.insert(session);
        return { user, guest, workspace, member, ca, account, daemon, session };
      };
      const doomed = await seed();
      const kept = await seed();
      const page = { limit: 100, offset: 0 };

      expect(await storage().workspaces.delete(doomed.workspace.id)).toBe(true);

      const { workspace: w, ca, account, daemon } = doomed;
      expect(await storage().members.find(w.id, doomed.user.id)).toBeNull();
      expect(await storage().members.find(w.id, doomed.guest.id)).toBeNull();
      expect(await storage().members.listByWorkspace(w.id)).toEqual([]);
      expect(await storage().certificateAuthorities.findById(w.id, ca.id)).toBeNull();
      expect(await storage().certificateAuthorities.list(w.id)).toEqual([]);
      expect(await storage().serviceAccounts.findById(w.id, account.id)).toBeNull();
      expect(await storage().serviceAccounts.findByIdForAuthentication(account.id)).toBeNull();
      expect((await storage().serviceAccounts.list(w.id, page)).total).toBe(0);
      expect(await storage().daemons.findById(w.id, daemon.id)).toBeNull();
      expect((await storage().daemons.list(w.id, page)).total).toBe(0);
      expect(await storage().auditEvents.list(w.id, page)).toEqual({ items: [], total: 0 });
      expect(await storage().workspaces.listForUser(doomed.user.id)).toEqual([]);
      // People and their sign-ins are not the workspace's to delete.
      expect(await storage().users.findById(doomed.user.id)).toEqual(doomed.user);
      expect(await storage().users.findById(doomed.guest.id)).toEqual(doomed.guest);
      expect(await storage().authSessions.findById(doomed.session.id)).toEqual(doomed.session);

      const k = kept;
      expect(await storage().workspaces.findById(k.workspace.id)).toEqual(k.workspace);
      expect(await storage().members.listByWorkspace(k.workspace.id)).toHaveLength(2);
      expect(await storage().certificateAuthorities.findById(k.workspace.id, k.ca.id)).toEqual(k.ca);
      expect(await storage().serviceAccounts.findById(k.workspace.id, k.account.id)).toEqual(k.account);
      expect(await storage().daemons.findById(k.workspace.id, k.daemon.id)).toEqual(k.daemon);
      expect((await storage().auditEvents.list(k.workspace.id, page)).total).toBe(2);
    });
  });

  deletionOfCertificates(ctx);
  settings(ctx);
  workspaceDeletion(ctx);
}

function deletionOfCertificates(ctx: ContractContext): void {
  const { test } = ctx;

  const _at = certificateAt;

  const storage = () => ctx.storage();

  test("workspaces: delete removes targets, ledger entries and retired keys with the workspace", async () => {
    const seed = async () => {
      const { workspace, ca } = await seedAuthority(ctx);
      const target = aWebTarget(workspace.id, ca.id);
      await storage().targets.insert(target);
      const entry = anIssued(workspace.id, ca.id, { targetId: target.id });
      await storage().issuedCertificates.insert(entry);
      await storage().retiredAuthorityKeys.insert(aRetiredKey(ca));
      return { workspace, ca, target, entry };
    };
    const doomed = await seed();
    const kept = await seed();
    expect(await storage().workspaces.delete(doomed.workspace.id)).toBe(true);
    for (const [seed, present] of [
      [doomed, false],
      [kept, true],
    ] as const) {
      const w = seed.workspace.id;
      expect(await storage().targets.findById(w, seed.target.id)).toEqual(present ? seed.target : null);
      expect(await storage().issuedCertificates.findBySerial(w, seed.ca.id, seed.entry.serial)).toEqual(
        present ? seed.entry : null,
      );
      expect((await storage().retiredAuthorityKeys.list(w, seed.ca.id)).length).toBe(present ? 1 : 0);
      expect((await storage().certificateAuthorities.findById(w, seed.ca.id)) !== null).toBe(present);
    }
  });
}

function settings(c: ContractContext): void {
  const { test } = c;

  const at = accessAt;

  const s = () => c.storage();

  describe("workspace settings and invite link", () => {
    test("settings: absent until set; upsert inserts, then replaces", async () => {
      const { ws } = await seedAccess(c);
      expect(await s().workspaceSettings.find(ws)).toBeNull();
      const first = {
        workspaceId: ws,
        enrollExpirySeconds: 300,
        inviteExpirySeconds: 2_592_000,
        updatedAt: at(1, 1),
      };
      await s().workspaceSettings.upsert(first);
      expect(await s().workspaceSettings.find(ws)).toEqual(first);
      const second = { ...first, enrollExpirySeconds: 3600, updatedAt: at(2, 2) };
      await s().workspaceSettings.upsert(second);
      expect(await s().workspaceSettings.find(ws)).toEqual(second);
    });
  });
}

function workspaceDeletion(c: ContractContext): void {
  const { test } = c;

  const at = accessAt;

  const s = () => c.storage();

  describe("workspace deletion", () => {
    test("workspaces: delete removes teams, grants, domains, invite and settings, and nothing else", async () => {
      const seed = async () => {
        const seeded = await seedAccess(c);
        const { ws, guest, target } = seeded;
        const team = aTeam(ws);
        await s().teams.insert(team);
        await s().teams.addMember(ws, team.id, guest.id, at(1));
        const p = aPrincipal(ws, target.id);
        await s().principals.insert(p);
        await s().principals.addSubjects(ws, p.id, "team", [team.id], at(2));
        await s().principals.addSubjects(ws, p.id, "user", [guest.id], at(3));
        const domain = aDomain(ws);
        await s().workspaceDomains.insert(domain);
        const invite = anInvite(ws);
        await s().workspaceInvites.replace(invite);
        await s().workspaceSettings.upsert({
          workspaceId: ws,
          enrollExpirySeconds: 600,
          inviteExpirySeconds: 600,
          updatedAt: at(4),
        });
        return { ...seeded, team, p, domain, invite };
      };
      const doomed = await seed();
      const kept = await seed();
      expect(await s().workspaces.delete(doomed.ws)).toBe(true);

      const d = doomed;
      expect(await s().teams.findById(d.ws, d.team.id)).toBeNull();
      expect(await s().teams.listMembers(d.ws, [d.team.id])).toEqual([]);
      expect(await s().principals.findById(d.ws, d.p.id)).toBeNull();
      expect(await s().principals.grantedTo(d.ws, [{ kind: "user", id: d.guest.id }])).toEqual([]);
      expect(await s().workspaceDomains.list(d.ws)).toEqual([]);
      expect(await s().workspaceInvites.findByTokenHash(d.invite.tokenHash)).toBeNull();
      expect(await s().workspaceSettings.find(d.ws)).toBeNull();
      expect(await s().targets.findById(d.ws, d.target.id)).toBeNull();
      expect(await s().users.findById(d.guest.id)).not.toBeNull();

      const k = kept;
      expect(await s().teams.findById(k.ws, k.team.id)).toEqual(k.team);
      expect(await s().teams.listMembers(k.ws, [k.team.id])).toHaveLength(1);
      expect((await s().principals.listByTargets(k.ws, [k.target.id]))[0]).toMatchObject({
        userIds: [k.guest.id],
        teamIds: [k.team.id],
      });
      expect(await s().workspaceDomains.find(k.ws, k.domain.domain)).toEqual(k.domain);
      expect(await s().workspaceInvites.find(k.ws)).toEqual(k.invite);
      expect(await s().workspaceSettings.find(k.ws)).not.toBeNull();
    });
  });
}
