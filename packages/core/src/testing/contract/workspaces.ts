/**
 * The storage contract of workspaces: round-trips, patches, listing by member, deletion and its
 * cascades. Registered by `runStorageContract`.
 *
 * @module
 */
import { describe, expect } from "vitest";
import {
  aDaemon,
  aMember,
  anAuditEvent,
  anAuthority,
  aServiceAccount,
  aSession,
  at,
  aUser,
  aWorkspace,
  type ContractContext,
  expectUnique,
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
}
