/**
 * The storage contract of the workspace-access repositories: memberships (and the "always an
 * owner" rule under concurrency), settings, the invite link, domains, teams, principals and their
 * grants, the target filters and catalog, and the cascades that keep grants consistent.
 * Registered by `runStorageContract`.
 *
 * @module
 */
import { randomUUID } from "node:crypto";
import { describe, expect } from "vitest";
import type { CertificateAuthorityRecord } from "../../storage/certificate-authorities.js";
import type { DaemonRecord } from "../../storage/daemons.js";
import type { WorkspaceDomainRecord } from "../../storage/domains.js";
import type { WorkspaceInviteRecord } from "../../storage/invites.js";
import type { MemberRecord } from "../../storage/members.js";
import type { PrincipalRecord } from "../../storage/principals.js";
import type { ServiceAccountRecord } from "../../storage/service-accounts.js";
import type { Repositories, Storage } from "../../storage/storage.js";
import type { TargetRecord } from "../../storage/targets.js";
import type { TeamRecord } from "../../storage/teams.js";
import type { UserRecord } from "../../storage/users.js";
import type { WorkspaceRecord } from "../../storage/workspaces.js";

/** What the main suite hands over: its storage, its test registrar and its fixtures. */
export interface WorkspaceAccessContractContext {
  readonly storage: () => Storage;
  readonly test: (name: string, fn: () => Promise<void>, timeout?: number) => void;
  readonly seedWorkspace: (
    s?: Repositories,
  ) => Promise<{ user: UserRecord; workspace: WorkspaceRecord; member: MemberRecord }>;
  readonly aUser: (overrides?: Partial<UserRecord>) => UserRecord;
  readonly aMember: (workspaceId: string, userId: string, overrides?: Partial<MemberRecord>) => MemberRecord;
  readonly anAuthority: (
    workspaceId: string,
    overrides?: Partial<CertificateAuthorityRecord>,
  ) => CertificateAuthorityRecord;
  readonly aServiceAccount: (
    workspaceId: string,
    overrides?: Partial<ServiceAccountRecord>,
  ) => ServiceAccountRecord;
  readonly aDaemon: (workspaceId: string, overrides?: Partial<DaemonRecord>) => DaemonRecord;
  readonly expectUnique: (promise: Promise<unknown>, constraint: string) => Promise<void>;
}

const base = Date.UTC(2025, 5, 1, 8, 0, 0, 250);
const at = (seconds: number, ms = 0) => new Date(base + seconds * 1000 + ms);
const uid = () => randomUUID();
const tag = () => randomUUID().slice(0, 8);
const page = { limit: 100, offset: 0 };

function aTeam(workspaceId: string, overrides: Partial<TeamRecord> = {}): TeamRecord {
  return {
    id: uid(),
    workspaceId,
    name: `Platform Team ${tag()}`,
    description: "keeps the lights on",
    tags: ["ops", "on-call"],
    createdAt: at(10, 1),
    updatedAt: at(10, 1),
    ...overrides,
  };
}

function aTarget(workspaceId: string, caId: string, overrides: Partial<TargetRecord> = {}): TargetRecord {
  return {
    id: uid(),
    workspaceId,
    caId,
    daemonId: null,
    name: `db-${tag()}`,
    description: "the Primary database",
    tags: ["prod"],
    endpoints: ["10.0.0.9:4022"],
    metadata: {},
    createdAt: at(20, 2),
    updatedAt: at(20, 2),
    ...overrides,
  };
}

function aPrincipal(
  workspaceId: string,
  targetId: string,
  overrides: Partial<PrincipalRecord> = {},
): PrincipalRecord {
  return { id: uid(), workspaceId, targetId, username: "deploy", createdAt: at(30, 3), ...overrides };
}

function aDomain(workspaceId: string, overrides: Partial<WorkspaceDomainRecord> = {}): WorkspaceDomainRecord {
  return {
    workspaceId,
    domain: `d${tag()}.example.com`,
    verificationToken: `wap-domain-verification=${tag()}`,
    verifiedAt: null,
    createdAt: at(40, 4),
    updatedAt: at(40, 4),
    ...overrides,
  };
}

function anInvite(
  workspaceId: string,
  overrides: Partial<WorkspaceInviteRecord> = {},
): WorkspaceInviteRecord {
  return {
    workspaceId,
    tokenHash: `hash-${uid()}`,
    role: "viewer",
    createdBy: uid(),
    createdAt: at(50, 5),
    expiresAt: at(50 + 86_400, 6),
    ...overrides,
  };
}

export function runWorkspaceAccessContract(c: WorkspaceAccessContractContext): void {
  const { test } = c;
  const s = () => c.storage();

  /** A workspace with its owner, a second member, an SSH authority and a target. */
  async function seedAccess() {
    const seeded = await c.seedWorkspace();
    const ws = seeded.workspace.id;
    const guest = c.aUser();
    await s().users.insert(guest);
    await s().members.insert(c.aMember(ws, guest.id, { role: "viewer", createdAt: at(100, 7) }));
    const ca = c.anAuthority(ws);
    await s().certificateAuthorities.insert(ca);
    const target = aTarget(ws, ca.id);
    await s().targets.insert(target);
    return { ...seeded, ws, guest, ca, target };
  }

  describe("memberships", () => {
    test("memberships: profiles join the user; list filters, pages and totals", async () => {
      const { ws, user, guest, member } = await seedAccess();
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
      const { ws, user, guest } = await seedAccess();
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
      const { ws, user, guest } = await seedAccess();
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
        const { ws, user, guest } = await seedAccess();
        const third = c.aUser();
        await s().users.insert(third);
        await s().members.insert(c.aMember(ws, third.id, { role: "owner" }));
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
      const a = await seedAccess();
      const b = await seedAccess();
      expect(await s().members.findProfile(a.ws, b.guest.id)).toBeNull();
      expect(await s().members.changeRole(a.ws, b.guest.id, "admin", at(500))).toBe("not_found");
      expect(await s().members.remove(a.ws, b.guest.id)).toBe("not_found");
      expect((await s().members.find(b.ws, b.guest.id))?.role).toBe("viewer");
    });
  });

  describe("workspace settings and invite link", () => {
    test("settings: absent until set; upsert inserts, then replaces", async () => {
      const { ws } = await seedAccess();
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

    test("invites: one per workspace; replace retires the old token; lookup by hash; delete", async () => {
      const a = await seedAccess();
      const b = await seedAccess();
      const first = anInvite(a.ws);
      await s().workspaceInvites.replace(first);
      expect(await s().workspaceInvites.find(a.ws)).toEqual(first);
      expect(await s().workspaceInvites.findByTokenHash(first.tokenHash)).toEqual(first);
      const second = anInvite(a.ws, { role: "editor", expiresAt: at(9000, 9) });
      await s().workspaceInvites.replace(second);
      expect(await s().workspaceInvites.findByTokenHash(first.tokenHash)).toBeNull();
      expect(await s().workspaceInvites.find(a.ws)).toEqual(second);
      await c.expectUnique(
        s().workspaceInvites.replace(anInvite(b.ws, { tokenHash: second.tokenHash })),
        "workspace_invites.token_hash",
      );
      expect(await s().workspaceInvites.find(b.ws)).toBeNull();
      expect(await s().workspaceInvites.delete(a.ws)).toBe(true);
      expect(await s().workspaceInvites.delete(a.ws)).toBe(false);
      expect(await s().workspaceInvites.findByTokenHash(second.tokenHash)).toBeNull();
    });
  });

  describe("workspace domains", () => {
    test("domains: round-trip, alphabetical list, update, delete; unique per workspace", async () => {
      const { ws } = await seedAccess();
      const later = aDomain(ws, { domain: `z-${tag()}.example.org` });
      const first = aDomain(ws, { domain: `a-${tag()}.example.org` });
      const dotted = aDomain(ws, { domain: `a.${first.domain}` });
      for (const d of [later, first, dotted]) await s().workspaceDomains.insert(d);
      expect(await s().workspaceDomains.find(ws, first.domain)).toEqual(first);
      expect((await s().workspaceDomains.list(ws)).map((d) => d.domain)).toEqual(
        [dotted.domain, first.domain, later.domain].sort(),
      );
      await c.expectUnique(
        s().workspaceDomains.insert(aDomain(ws, { domain: first.domain })),
        "workspace_domains.domain",
      );
      const verified = await s().workspaceDomains.update(
        ws,
        first.domain,
        { verifiedAt: at(60, 6) },
        at(61, 7),
      );
      expect(verified).toEqual({ ...first, verifiedAt: at(60, 6), updatedAt: at(61, 7) });
      const retokened = await s().workspaceDomains.update(
        ws,
        first.domain,
        { verificationToken: "t2" },
        at(62, 8),
      );
      expect(retokened).toEqual({
        ...first,
        verificationToken: "t2",
        verifiedAt: at(60, 6),
        updatedAt: at(62, 8),
      });
      expect(
        await s().workspaceDomains.update(ws, "nope.example.com", { verificationToken: "x" }, at(63)),
      ).toBeNull();
      expect(await s().workspaceDomains.delete(ws, first.domain)).toBe(true);
      expect(await s().workspaceDomains.delete(ws, first.domain)).toBe(false);
      expect(await s().workspaceDomains.find(ws, first.domain)).toBeNull();
    });

    test("domains: many workspaces may claim a domain, one may verify it", async () => {
      const a = await seedAccess();
      const b = await seedAccess();
      const domain = `shared-${tag()}.example.net`;
      await s().workspaceDomains.insert(aDomain(a.ws, { domain }));
      await s().workspaceDomains.insert(aDomain(b.ws, { domain }));
      expect(await s().workspaceDomains.update(a.ws, domain, { verifiedAt: at(70) }, at(70))).not.toBeNull();
      await c.expectUnique(
        s().workspaceDomains.update(b.ws, domain, { verifiedAt: at(71) }, at(71)),
        "workspace_domains.verified_domain",
      );
      expect((await s().workspaceDomains.find(b.ws, domain))?.verifiedAt).toBeNull();
      // Another workspace's claim is invisible.
      expect(await s().workspaceDomains.delete(b.ws, `x${domain}`)).toBe(false);
      expect((await s().workspaceDomains.list(b.ws)).map((d) => d.domain)).toEqual([domain]);
    });
  });

  describe("teams", () => {
    test("teams: round-trip, filters, paging, update; names unique per workspace", async () => {
      const a = await seedAccess();
      const b = await seedAccess();
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
      await c.expectUnique(s().teams.insert(aTeam(a.ws, { name: older.name })), "teams.name");
      await s().teams.insert(aTeam(b.ws, { name: older.name }));
      const renamed = await s().teams.update(a.ws, older.id, { name: "renamed", tags: [] }, at(3, 3));
      expect(renamed).toEqual({ ...older, name: "renamed", tags: [], updatedAt: at(3, 3) });
      await c.expectUnique(s().teams.update(a.ws, newer.id, { name: "renamed" }, at(4)), "teams.name");
      expect(await s().teams.update(b.ws, older.id, { name: "stolen" }, at(5))).toBeNull();
      expect(await s().teams.delete(b.ws, older.id)).toBe(false);
      expect(await s().teams.delete(a.ws, older.id)).toBe(true);
      expect(await s().teams.findById(a.ws, older.id)).toBeNull();
    });

    test("teams: members are added once, listed with profiles, removed; teamsOf", async () => {
      const { ws, user, guest } = await seedAccess();
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
      const a = await seedAccess();
      const b = await seedAccess();
      const team = aTeam(a.ws);
      await s().teams.insert(team);
      await expect(s().teams.addMember(a.ws, team.id, b.guest.id, at(1))).rejects.toThrow();
      await expect(s().teams.addMember(b.ws, team.id, b.guest.id, at(1))).rejects.toThrow();
      expect(await s().teams.listMembers(a.ws, [team.id])).toEqual([]);
      expect(await s().teams.listMembers(b.ws, [team.id])).toEqual([]);
    });
  });

  describe("principals and grants", () => {
    test("principals: round-trip, unique username per target, list filters and grants", async () => {
      const { ws, user, guest, ca, target } = await seedAccess();
      const second = aTarget(ws, ca.id, { createdAt: at(21) });
      await s().targets.insert(second);
      const deploy = aPrincipal(ws, target.id, { username: "deploy" });
      const root = aPrincipal(ws, target.id, { username: "_root$" });
      const other = aPrincipal(ws, second.id, { username: "deploy" });
      for (const p of [deploy, root, other]) await s().principals.insert(p);
      expect(await s().principals.findById(ws, deploy.id)).toEqual(deploy);
      await c.expectUnique(
        s().principals.insert(aPrincipal(ws, target.id, { username: "deploy" })),
        "principals.username",
      );

      const team = aTeam(ws);
      await s().teams.insert(team);
      const account = c.aServiceAccount(ws);
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
      });
      expect(grants?.userIds).toHaveLength(2);

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

    test("principals: grants follow their subjects and targets away (cascades)", async () => {
      const { ws, guest, ca, target } = await seedAccess();
      const p = aPrincipal(ws, target.id);
      await s().principals.insert(p);
      const team = aTeam(ws);
      await s().teams.insert(team);
      const account = c.aServiceAccount(ws);
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
      const a = await seedAccess();
      const b = await seedAccess();
      const p = aPrincipal(a.ws, a.target.id);
      await s().principals.insert(p);
      await expect(s().principals.insert(aPrincipal(a.ws, b.target.id))).rejects.toThrow();
      await expect(s().principals.addSubjects(a.ws, p.id, "user", [b.guest.id], at(1))).rejects.toThrow();
      const account = c.aServiceAccount(b.ws);
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

  describe("target filters and catalog", () => {
    test("targets: list by query, tags and principal usernames", async () => {
      const { ws, ca, target } = await seedAccess();
      const web = aTarget(ws, ca.id, {
        name: `Web-${tag()}`,
        description: "Front END",
        tags: ["prod", "eu"],
        createdAt: at(30),
      });
      await s().targets.insert(web);
      await s().principals.insert(aPrincipal(ws, web.id, { username: "www" }));
      await s().principals.insert(aPrincipal(ws, target.id, { username: "postgres" }));
      const ids = async (filter: object) =>
        (await s().targets.list(ws, { ...page, ...filter })).items.map((t) => t.id);
      expect(await ids({ query: "web-" })).toEqual([web.id]);
      expect(await ids({ query: "front end" })).toEqual([web.id]);
      expect(await ids({ query: "PRIMARY" })).toEqual([target.id]);
      expect(await ids({ tags: ["prod"] })).toEqual([target.id, web.id]);
      expect(await ids({ tags: ["prod", "eu"] })).toEqual([web.id]);
      expect(await ids({ principals: ["www"] })).toEqual([web.id]);
      expect(await ids({ principals: ["www", "postgres"] })).toEqual([target.id, web.id]);
      expect(await ids({ principals: ["nobody"] })).toEqual([]);
      expect((await s().targets.list(ws, { ...page, tags: ["eu"], principals: ["www"] })).total).toBe(1);
    });

    test("target catalog: by ids, distinct tags, daemons of targets; other workspaces excluded", async () => {
      const a = await seedAccess();
      const b = await seedAccess();
      const second = aTarget(a.ws, a.ca.id, { tags: ["eu", "prod"], createdAt: at(40) });
      await s().targets.insert(second);
      expect(
        (await s().targets.listByIds(a.ws, [second.id, a.target.id, b.target.id, uid()])).map((t) => t.id),
      ).toEqual([a.target.id, second.id]);
      expect(await s().targets.tags(a.ws)).toEqual(["eu", "prod"]);
      const daemon = c.aDaemon(a.ws, { targetId: second.id });
      await s().daemons.insert(daemon);
      await s().daemons.insert(c.aDaemon(b.ws, { targetId: b.target.id }));
      expect(
        (await s().targets.daemonsOf(a.ws, [a.target.id, second.id, b.target.id])).map((d) => d.id),
      ).toEqual([daemon.id]);
      expect(await s().targets.daemonsOf(b.ws, [second.id])).toEqual([]);
    });
  });

  describe("workspace deletion", () => {
    test("workspaces: delete removes teams, grants, domains, invite and settings, and nothing else", async () => {
      const seed = async () => {
        const seeded = await seedAccess();
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
