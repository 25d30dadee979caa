/**
 * TargetService and PrincipalService: targets with their CA link, endpoints, tags and filters;
 * principals and grants to users, teams and service accounts; GetSubjectAccess as the CLI uses it.
 */

import {
  AuthorityType,
  CertificateKeyType,
  CertificateService,
  PrincipalService,
  PrincipalType,
  TargetService,
  TeamService,
  WorkspaceService,
} from "@wap/api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { memberWithRole, type Owner, serviceAccountCaller, sshAuthority } from "./support/access.js";
import { insertAcceptedDaemon } from "./support/daemons.js";
import { createTestPlatform, expectCode, type TestPlatform } from "./support.js";

let t: TestPlatform;
let ada: Owner;
beforeEach(async () => {
  t = await createTestPlatform();
  ada = await t.owner();
});
afterEach(() => t.platform.close());

const T = TargetService.method;
const P = PrincipalService.method;
const ws = () => ada.workspaceId;
/** Creates a target, then moves the clock on so lists (oldest first) keep creation order. */
const createTarget = async (request: Record<string, unknown>) => {
  const { target } = await t.call(ada.caller, T.createTarget, { workspaceId: ws(), ...request });
  t.clock.advance(1000);
  return target!;
};

describe("targets", () => {
  it("trust the default SSH authority unless told otherwise; never an X.509 one", async () => {
    await expectCode(createTarget({ name: "web-1" }), "failed_precondition");
    const ssh = await sshAuthority(t, ada);
    const second = await sshAuthority(t, ada);
    const web = await createTarget({ name: "web-1", endpoints: ["10.0.0.1:4022"], tags: ["prod"] });
    expect(web).toMatchObject({
      caId: ssh.id,
      name: "web-1",
      endpoints: ["10.0.0.1:4022"],
      tags: ["prod"],
      daemonId: "",
    });
    expect((await createTarget({ name: "web-2", caId: second.id })).caId).toBe(second.id);
    const { certificateAuthority: x509 } = await t.call(
      ada.caller,
      CertificateService.method.createCertificateAuthority,
      {
        workspaceId: ws(),
        name: "tls",
        keyType: CertificateKeyType.ED25519,
        authorityType: AuthorityType.X509,
      },
    );
    const refused = await expectCode(createTarget({ name: "web-3", caId: x509!.id }), "failed_precondition");
    expect(refused.reason).toBe("CA_NOT_SSH");
    await expectCode(createTarget({ name: "web-3", caId: crypto.randomUUID() }), "not_found");
    // The authority a target trusts is not deleted under it.
    await expectCode(
      t.call(ada.caller, CertificateService.method.deleteCertificateAuthority, {
        workspaceId: ws(),
        id: second.id,
      }),
      "failed_precondition",
    );
  });

  it("have unique names of the resource pattern; update only what is sent", async () => {
    await sshAuthority(t, ada);
    const web = await createTarget({ name: "web-1", description: "front", tags: ["prod"] });
    await expectCode(createTarget({ name: "web-1" }), "already_exists");
    for (const name of ["-web", "web.1", "web 1", ""])
      await expectCode(createTarget({ name }), "invalid_argument");
    const db = await createTarget({ name: "db_1" });
    await expectCode(
      t.call(ada.caller, T.updateTarget, { workspaceId: ws(), id: db.id, name: "web-1" }),
      "already_exists",
    );
    const { target } = await t.call(ada.caller, T.updateTarget, {
      workspaceId: ws(),
      id: web.id,
      endpoints: ["h:22"],
    });
    expect(target).toMatchObject({
      name: "web-1",
      description: "front",
      tags: ["prod"],
      endpoints: ["h:22"],
    });
    await expectCode(
      t.call(ada.caller, T.updateTarget, { workspaceId: ws(), id: crypto.randomUUID(), name: "x" }),
      "not_found",
    );
  });

  it("take endpoints only as host names or IP addresses with a port: anything else is refused, naming the field and the form", async () => {
    await sshAuthority(t, ada);
    const web = await createTarget({
      name: "web-1",
      endpoints: ["web-01.internal", "10.0.0.5:4022", "[fd00::5]:4022"],
    });
    expect(web.endpoints).toEqual(["web-01.internal", "10.0.0.5:4022", "[fd00::5]:4022"]);
    const form =
      "must be a host name or an IP address with an optional port (web-01.internal, 10.0.0.5:4022, [fd00::5]:4022)";
    for (const bad of ["-oProxyCommand=touch /tmp/x", "-oProxyCommand=/tmp/x", "web 01", "web%h", "web:0"]) {
      const created = await expectCode(
        createTarget({ name: "web-2", endpoints: ["10.0.0.6", bad] }),
        "invalid_argument",
      );
      expect(created.violations).toEqual([{ field: "endpoints.1", description: form }]);
      const updated = await expectCode(
        t.call(ada.caller, T.updateTarget, { workspaceId: ws(), id: web.id, endpoints: [bad] }),
        "invalid_argument",
      );
      expect(updated.violations.map((v) => v.field)).toEqual(["endpoints.0"]);
    }
    // Nothing changed.
    const { targets, total } = await t.call(ada.caller, T.listTargets, { workspaceId: ws() });
    expect(total).toBe(1);
    expect(targets[0]!.endpoints).toEqual(web.endpoints);
  });

  it("refuse control characters in names, descriptions and tags", async () => {
    await sshAuthority(t, ada);
    const web = await createTarget({ name: "web-1" });
    for (const field of [
      { description: "a\nHost *" },
      { tags: ["prod\u001b[31m"] },
      { description: "\u202egnp.exe" },
    ]) {
      const refused = await expectCode(
        t.call(ada.caller, T.updateTarget, { workspaceId: ws(), id: web.id, ...field }),
        "invalid_argument",
      );
      expect(refused.violations[0]!.description).toMatch(/control characters/);
    }
    const renamed = await expectCode(
      t.call(ada.caller, WorkspaceService.method.updateWorkspace, {
        workspaceId: ws(),
        name: "Platform team\nHost *\n  ProxyCommand touch /tmp/x\n#",
      }),
      "invalid_argument",
    );
    expect(renamed.violations).toEqual([
      {
        field: "name",
        description:
          "must not contain control characters (line breaks, tabs, escape sequences or bidirectional overrides)",
      },
    ]);
  });

  it("are listed with filters and total; GetTargetFilters gives the distinct tags and usernames", async () => {
    await sshAuthority(t, ada);
    const web = await createTarget({ name: "web", tags: ["prod", "eu"], description: "Front end" });
    const db = await createTarget({ name: "db", tags: ["prod"] });
    await createTarget({ name: "lab", tags: ["dev"] });
    await t.call(ada.caller, P.setPrincipals, {
      workspaceId: ws(),
      targetId: web.id,
      usernames: ["www", "deploy"],
    });
    await t.call(ada.caller, P.setPrincipals, {
      workspaceId: ws(),
      targetId: db.id,
      usernames: ["postgres", "deploy"],
    });
    const vic = await memberWithRole(t, ws(), "viewer");
    const list = (request: Record<string, unknown>) =>
      t.call(vic.caller, T.listTargets, { workspaceId: ws(), ...request }).then((r) => ({
        names: r.targets.map((x) => x.name),
        total: r.total,
      }));
    expect(await list({})).toEqual({ names: ["web", "db", "lab"], total: 3 });
    expect(await list({ tags: ["prod"] })).toEqual({ names: ["web", "db"], total: 2 });
    expect(await list({ principals: ["postgres"] })).toEqual({ names: ["db"], total: 1 });
    expect(await list({ query: "FRONT" })).toEqual({ names: ["web"], total: 1 });
    expect(await list({ limit: 1, offset: 1 })).toEqual({ names: ["db"], total: 3 });
    expect(await list({ caId: "not-a-uuid" })).toEqual({ names: [], total: 0 });
    const filters = await t.call(vic.caller, T.getTargetFilters, { workspaceId: ws() });
    expect(filters).toMatchObject({ tags: ["dev", "eu", "prod"], principals: ["deploy", "postgres", "www"] });
    const { target } = await t.call(vic.caller, T.getTarget, { workspaceId: ws(), id: web.id });
    expect(target?.principals.map((p) => p.username).sort()).toEqual(["deploy", "www"]);
  });

  it("are changed by editors, not viewers; a target a daemon serves is not deleted", async () => {
    await sshAuthority(t, ada);
    const ed = await memberWithRole(t, ws(), "editor");
    const vic = await memberWithRole(t, ws(), "viewer");
    const robot = await serviceAccountCaller(t, ada, "viewer");
    const { target } = await t.call(ed.caller, T.createTarget, { workspaceId: ws(), name: "web" });
    await expectCode(
      t.call(vic.caller, T.createTarget, { workspaceId: ws(), name: "x" }),
      "permission_denied",
    );
    await expectCode(
      t.call(robot, T.deleteTarget, { workspaceId: ws(), id: target!.id }),
      "permission_denied",
    );
    const now = t.clock.now();
    await t.storage.daemons.insert({
      id: crypto.randomUUID(),
      workspaceId: ws(),
      targetId: target!.id,
      name: "web",
      status: "accepted",
      recordSessions: false,
      metadata: {},
      authPublicKey: "",
      authMethod: "tpm",
      onlineSince: null,
      createdAt: now,
      updatedAt: now,
    });
    const served = await expectCode(
      t.call(ed.caller, T.deleteTarget, { workspaceId: ws(), id: target!.id }),
      "failed_precondition",
    );
    expect(served.reason).toBe("TARGET_HAS_DAEMON");
    const lab = await createTarget({ name: "lab" });
    await t.call(ada.caller, P.setPrincipals, { workspaceId: ws(), targetId: lab.id, usernames: ["root"] });
    await t.call(ed.caller, T.deleteTarget, { workspaceId: ws(), id: lab.id });
    await expectCode(t.call(ed.caller, T.getTarget, { workspaceId: ws(), id: lab.id }), "not_found");
    expect((await t.call(ed.caller, P.listPrincipals, { workspaceId: ws() })).total).toBe(0);
  });
});

describe("principals", () => {
  it("SetPrincipals replaces the usernames; a kept username keeps its grants", async () => {
    await sshAuthority(t, ada);
    const web = await createTarget({ name: "web" });
    await t.call(ada.caller, P.setPrincipals, {
      workspaceId: ws(),
      targetId: web.id,
      usernames: ["deploy", "root"],
    });
    const { principals } = await t.call(ada.caller, P.listPrincipals, {
      workspaceId: ws(),
      targetId: web.id,
    });
    const deploy = principals.find((p) => p.username === "deploy")!;
    await t.call(ada.caller, P.addSubjectsToPrincipal, {
      workspaceId: ws(),
      id: deploy.id,
      subjectIds: [ada.caller.userId],
      type: PrincipalType.USER,
    });
    await t.call(ada.caller, P.setPrincipals, {
      workspaceId: ws(),
      targetId: web.id,
      usernames: ["deploy", "svc$"],
    });
    const after = await t.call(ada.caller, P.listPrincipals, { workspaceId: ws(), targetId: web.id });
    expect(after.principals.map((p) => p.username).sort()).toEqual(["deploy", "svc$"]);
    expect(after.principals.find((p) => p.username === "deploy")).toMatchObject({
      id: deploy.id,
      userIds: [ada.caller.userId],
    });
    await expectCode(
      t.call(ada.caller, P.setPrincipals, { workspaceId: ws(), targetId: web.id, usernames: ["a", "a"] }),
      "invalid_argument",
    );
    await t.call(ada.caller, P.setPrincipals, { workspaceId: ws(), targetId: web.id, usernames: [] });
    expect((await t.call(ada.caller, P.listPrincipals, { workspaceId: ws() })).total).toBe(0);
  });

  it("grants to users, teams and service accounts of the workspace only; type filter; RevokeAllAccess", async () => {
    await sshAuthority(t, ada);
    const web = await createTarget({ name: "web" });
    await t.call(ada.caller, P.setPrincipals, {
      workspaceId: ws(),
      targetId: web.id,
      usernames: ["deploy", "root"],
    });
    const { principals } = await t.call(ada.caller, P.listPrincipals, { workspaceId: ws() });
    const [deploy, root] = [
      principals.find((p) => p.username === "deploy")!,
      principals.find((p) => p.username === "root")!,
    ];
    const vic = await memberWithRole(t, ws(), "viewer");
    const robot = await serviceAccountCaller(t, ada, "editor");
    const { team } = await t.call(ada.caller, TeamService.method.createTeam, {
      workspaceId: ws(),
      name: "ops",
    });
    const grant = (id: string, subjectIds: string[], type: PrincipalType) =>
      t.call(ada.caller, P.addSubjectsToPrincipal, { workspaceId: ws(), id, subjectIds, type });
    await grant(deploy.id, [vic.caller.userId, ada.caller.userId], PrincipalType.USER);
    await grant(deploy.id, [team!.id], PrincipalType.TEAM);
    await grant(root.id, [robot.serviceAccountId], PrincipalType.SERVICE_ACCOUNT);
    // Ids of the wrong kind, or of nothing in this workspace, are not_found.
    await expectCode(grant(deploy.id, [team!.id], PrincipalType.USER), "not_found");
    const outsider = await t.signUp();
    await expectCode(grant(deploy.id, [outsider.caller.userId], PrincipalType.USER), "not_found");
    await expectCode(grant(crypto.randomUUID(), [vic.caller.userId], PrincipalType.USER), "not_found");

    const byType = async (type: PrincipalType) =>
      (await t.call(ada.caller, P.listPrincipals, { workspaceId: ws(), type })).principals.map(
        (p) => p.username,
      );
    expect(await byType(PrincipalType.TEAM)).toEqual(["deploy"]);
    expect(await byType(PrincipalType.SERVICE_ACCOUNT)).toEqual(["root"]);
    expect((await t.call(ada.caller, P.listPrincipals, { workspaceId: ws(), query: "ROO" })).total).toBe(1);

    await t.call(ada.caller, P.removeSubjectsFromPrincipal, {
      workspaceId: ws(),
      id: deploy.id,
      subjectIds: [vic.caller.userId, crypto.randomUUID()],
      type: PrincipalType.USER,
    });
    await t.call(ada.caller, P.revokeAllAccess, {
      workspaceId: ws(),
      subjectId: robot.serviceAccountId,
      type: PrincipalType.SERVICE_ACCOUNT,
    });
    await expectCode(
      t.call(ada.caller, P.revokeAllAccess, {
        workspaceId: ws(),
        subjectId: outsider.caller.userId,
        type: PrincipalType.USER,
      }),
      "not_found",
    );
    const final = await t.call(ada.caller, P.listPrincipals, { workspaceId: ws() });
    expect(final.principals.find((p) => p.username === "deploy")).toMatchObject({
      userIds: [ada.caller.userId],
      teamIds: [team!.id],
      serviceAccountIds: [],
    });
    expect(final.principals.find((p) => p.username === "root")?.serviceAccountIds).toEqual([]);
  });
});

describe("GetSubjectAccess", () => {
  async function world() {
    const ssh = await sshAuthority(t, ada);
    const { certificateAuthority: x509 } = await t.call(
      ada.caller,
      CertificateService.method.createCertificateAuthority,
      {
        workspaceId: ws(),
        name: "tls",
        keyType: CertificateKeyType.ED25519,
        authorityType: AuthorityType.X509,
      },
    );
    const web = await createTarget({ name: "web", endpoints: ["10.0.0.1:4022"] });
    const db = await createTarget({ name: "db", endpoints: ["10.0.0.2:4022"] });
    const lab = await createTarget({ name: "lab" });
    for (const [target, usernames] of [
      [web, ["deploy", "www"]],
      [db, ["postgres"]],
      [lab, ["root"]],
    ] as const) {
      await t.call(ada.caller, P.setPrincipals, {
        workspaceId: ws(),
        targetId: target.id,
        usernames: [...usernames],
      });
    }
    const { principals } = await t.call(ada.caller, P.listPrincipals, { workspaceId: ws() });
    const principal = (username: string) => principals.find((p) => p.username === username)!.id;
    const vic = await memberWithRole(t, ws(), "viewer");
    const robot = await serviceAccountCaller(t, ada, "viewer");
    const { team } = await t.call(ada.caller, TeamService.method.createTeam, {
      workspaceId: ws(),
      name: "dba",
    });
    await t.call(ada.caller, TeamService.method.addTeamMember, {
      workspaceId: ws(),
      teamId: team!.id,
      userId: vic.caller.userId,
    });
    const grant = (username: string, subjectIds: string[], type: PrincipalType) =>
      t.call(ada.caller, P.addSubjectsToPrincipal, {
        workspaceId: ws(),
        id: principal(username),
        subjectIds,
        type,
      });
    await grant("www", [vic.caller.userId], PrincipalType.USER);
    await grant("postgres", [team!.id], PrincipalType.TEAM);
    await grant("root", [robot.serviceAccountId], PrincipalType.SERVICE_ACCOUNT);
    return { ssh, x509: x509!, web, db, lab, vic, robot, team: team! };
  }

  it("returns what a user reaches directly and through teams", async () => {
    const w = await world();
    const access = await t.call(w.vic.caller, T.getSubjectAccess, {
      workspaceId: ws(),
      subjectId: w.vic.caller.userId,
    });
    expect(access.targets.map((x) => x.name).sort()).toEqual(["db", "web"]);
    const web = access.targets.find((x) => x.name === "web")!;
    // Only the principals the subject may use; the first is the CLI's default login.
    expect(web.principals.map((p) => p.username)).toEqual(["www"]);
    expect(web.endpoints).toEqual(["10.0.0.1:4022"]);
    expect(access.targets.find((x) => x.name === "db")?.principals.map((p) => p.username)).toEqual([
      "postgres",
    ]);
    // Only SSH authorities, one line each, and every target's CA among them.
    expect(access.certificateAuthorities.map((ca) => ca.id)).toEqual([w.ssh.id]);
    for (const ca of access.certificateAuthorities) {
      expect(ca.authorityType).toBe(AuthorityType.SSH);
      expect(ca.publicKey).toMatch(/^ssh-ed25519 \S+$/);
      expect(ca.userDefaultTtl).toBeDefined();
      expect(ca.userMaxTtl).toBeDefined();
    }
    for (const target of access.targets)
      expect(access.certificateAuthorities.map((ca) => ca.id)).toContain(target.caId);
  });

  it("works for teams and service accounts, and for every member asking about themselves", async () => {
    const w = await world();
    const team = await t.call(ada.caller, T.getSubjectAccess, { workspaceId: ws(), subjectId: w.team.id });
    expect(team.targets.map((x) => x.name)).toEqual(["db"]);
    const robot = await t.call(w.robot, T.getSubjectAccess, {
      workspaceId: ws(),
      subjectId: w.robot.serviceAccountId,
    });
    expect(robot.targets.map((x) => x.name)).toEqual(["lab"]);
    // No grants: an empty answer, never an error.
    for (const role of ["owner", "admin", "editor", "viewer"] as const) {
      const member = role === "owner" ? ada : await memberWithRole(t, ws(), role);
      const mine = await t.call(member.caller, T.getSubjectAccess, {
        workspaceId: ws(),
        subjectId: member.caller.userId,
      });
      expect(mine).toMatchObject({ targets: [], daemons: [], certificateAuthorities: [] });
    }
    // Leaving out the subject means the caller.
    expect((await t.call(w.vic.caller, T.getSubjectAccess, { workspaceId: ws() })).targets).toHaveLength(2);
    await expectCode(
      t.call(ada.caller, T.getSubjectAccess, { workspaceId: ws(), subjectId: crypto.randomUUID() }),
      "not_found",
    );
  });

  it("lists the daemons serving the reachable targets and follows revocations", async () => {
    const w = await world();
    const daemonId = await insertAcceptedDaemon(t, {
      workspaceId: ws(),
      targetId: w.web.id,
      name: "web",
      recordSessions: false,
    });
    const before = await t.call(w.vic.caller, T.getSubjectAccess, {
      workspaceId: ws(),
      subjectId: w.vic.caller.userId,
    });
    expect(before.daemons.map((d) => d.id)).toEqual([daemonId]);
    await t.call(ada.caller, TeamService.method.removeTeamMember, {
      workspaceId: ws(),
      teamId: w.team.id,
      userId: w.vic.caller.userId,
    });
    await t.call(ada.caller, P.revokeAllAccess, {
      workspaceId: ws(),
      subjectId: w.vic.caller.userId,
      type: PrincipalType.USER,
    });
    const after = await t.call(w.vic.caller, T.getSubjectAccess, {
      workspaceId: ws(),
      subjectId: w.vic.caller.userId,
    });
    expect(after).toMatchObject({ targets: [], daemons: [], certificateAuthorities: [] });
  });
});

describe("deleting a workspace", () => {
  it("removes its teams, targets, principals, grants, domains, invite link and settings at once", async () => {
    const w = await (async () => {
      const ssh = await sshAuthority(t, ada);
      const web = await createTarget({ name: "web", caId: ssh.id });
      await t.call(ada.caller, P.setPrincipals, {
        workspaceId: ws(),
        targetId: web.id,
        usernames: ["deploy"],
      });
      const { team } = await t.call(ada.caller, TeamService.method.createTeam, {
        workspaceId: ws(),
        name: "ops",
      });
      return { web, team: team! };
    })();
    const bob = await t.owner();
    await sshAuthority(t, bob);
    const { target: kept } = await t.call(bob.caller, T.createTarget, {
      workspaceId: bob.workspaceId,
      name: "web",
    });
    await t.call(ada.caller, WorkspaceService.method.deleteWorkspace, { workspaceId: ws() });
    expect(await t.storage.targets.findById(ws(), w.web.id)).toBeNull();
    expect(await t.storage.teams.findById(ws(), w.team.id)).toBeNull();
    expect(await t.storage.principals.usernames(ws())).toEqual([]);
    expect(await t.storage.targets.findById(bob.workspaceId, kept!.id)).not.toBeNull();
  });
});
