/**
 * The audit walk's table: for every RPC of the contract that is not NO_SIDE_EFFECTS, how to make
 * one call of it succeed in a fresh fixture and the audit entries it must leave, or why it
 * leaves none. audit-walk.test.ts fails for a mutating RPC missing here.
 */
import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { DescMessage, DescMethodUnary } from "@bufbuild/protobuf";
import { type Caller, createCallContext, type UserCaller } from "../../src/context.js";
import { startCliLogin } from "../../src/devices/cli-login.js";
import { AuthService } from "../../src/gen/platform/v1/auth_pb.js";
import { BillingService } from "../../src/gen/platform/v1/billing_pb.js";
import {
  AuthorityType,
  CertificateKeyType,
  CertificateService,
  SignSSHCertificateRequest_CertificateType,
  SignX509CertificateRequest_X509Usage,
} from "../../src/gen/platform/v1/certificates_pb.js";
import { CredentialService } from "../../src/gen/platform/v1/credential_pb.js";
import {
  DaemonControlService,
  DaemonService,
  DaemonSessionService,
  DaemonStatus,
} from "../../src/gen/platform/v1/daemon_pb.js";
import { InvitationService } from "../../src/gen/platform/v1/invitation_pb.js";
import { PrincipalService, PrincipalType } from "../../src/gen/platform/v1/principal_pb.js";
import { RecordingService } from "../../src/gen/platform/v1/recording_pb.js";
import { ServiceAccountService } from "../../src/gen/platform/v1/service_account_pb.js";
import { SSOService } from "../../src/gen/platform/v1/sso_pb.js";
import { TargetService } from "../../src/gen/platform/v1/target_pb.js";
import { TeamService } from "../../src/gen/platform/v1/team_pb.js";
import { UserService } from "../../src/gen/platform/v1/user_pb.js";
import { UtilService } from "../../src/gen/platform/v1/util_pb.js";
import { WorkspaceDomainService } from "../../src/gen/platform/v1/workspace_domain_pb.js";
import { WorkspaceService } from "../../src/gen/platform/v1/workspace_pb.js";
import { procedureOf } from "../../src/platform.js";
import { memberWithRole, type Owner, serviceAccountCaller, sshAuthority } from "./access.js";
import { linkParam, publicBaseUrl } from "./accounts.js";
import type { ExpectedEntry, PreparedCall, RequestFacts, WalkFixture, WalkStep } from "./audit-walk.js";
import { createSoftwareAuthenticator } from "./authenticator.js";
import { createAuthority, run, scratch, subjectKey } from "./certificates.js";
import { aDaemonKey, callAsDaemon, daemonCaller, enroll, grantLogin, type TestDaemon } from "./daemons.js";

// --- helpers -------------------------------------------------------------------------------------

const anonymous: Caller = { kind: "anonymous" };
const password = "correct horse battery";

/**
 * Calls one of several methods the table treats alike (their requests differ only in the
 * fields given); TypeScript cannot pair a union of descriptors with its requests.
 */
function invokeEither(
  f: WalkFixture,
  caller: Caller,
  method: unknown,
  request: Record<string, unknown>,
  facts: RequestFacts,
): Promise<unknown> {
  return f.invoke(caller, method as DescMethodUnary<DescMessage, DescMessage>, request as never, facts);
}

/** A call and what it must leave; `R` is the response. */
function prepared<R>(
  call: (facts: RequestFacts) => Promise<R>,
  entries: (response: R) => ExpectedEntry[] | Promise<ExpectedEntry[]>,
): PreparedCall {
  return { call, entries } as PreparedCall;
}

const byUser = (userId: string) => ({ type: "user", id: userId });

/** One entry acted by `actor` (a user id, or an actor). */
function entry(
  actor: string | ExpectedEntry["actor"],
  action: string,
  resource: string,
  workspaceId: string | null,
): ExpectedEntry {
  return { actor: typeof actor === "string" ? byUser(actor) : actor, action, resource, workspaceId };
}

/** The session an access token belongs to. */
async function sessionOf(f: WalkFixture, accessToken: string): Promise<string> {
  const { caller } = await f.platform.authenticate({ bearer: accessToken });
  if (caller.kind !== "user") throw new Error("the token did not sign in a user");
  return caller.sessionId;
}

/** The token of the next mail to `to` whose link goes to `path`. */
async function mailedToken(f: WalkFixture, to: string, path: string): Promise<string> {
  for (;;) {
    const mail = await f.mail.next(to);
    if (mail.text.includes(path)) return linkParam(mail, "token");
  }
}

/** Registers a passkey for `caller` with a software authenticator. */
async function withPasskey(f: WalkFixture, caller: UserCaller) {
  const key = createSoftwareAuthenticator({ origin: publicBaseUrl });
  const { optionsJson } = await f.call(caller, CredentialService.method.beginPasskeyRegistration, {});
  const { passkey } = await f.call(caller, CredentialService.method.finishPasskeyRegistration, {
    credentialJson: key.create(optionsJson),
  });
  return { key, passkey: passkey! };
}

const uniqueDomain = () => `walk-${randomUUID().slice(0, 8)}.example.com`;

async function aTeam(f: WalkFixture, owner: Owner) {
  const { team } = await f.call(owner.caller, TeamService.method.createTeam, {
    workspaceId: owner.workspaceId,
    name: `team-${randomUUID().slice(0, 8)}`,
  });
  return team!;
}

async function aTarget(f: WalkFixture, owner: Owner) {
  await sshAuthority(f, owner);
  const { target } = await f.call(owner.caller, TargetService.method.createTarget, {
    workspaceId: owner.workspaceId,
    name: `target-${randomUUID().slice(0, 8)}`,
  });
  return target!;
}

/** An SSH authority and a daemon enrolled with the workspace's token. */
async function aDaemon(f: WalkFixture, owner: Owner): Promise<TestDaemon> {
  await sshAuthority(f, owner);
  const { token } = await f.call(owner.caller, DaemonService.method.refreshEnrollToken, {
    workspaceId: owner.workspaceId,
  });
  return enroll(f, token, { hostname: "web-1" });
}

/**
 * An accepted daemon with an open control stream that knows `owner` may log in as `ubuntu`: what
 * CreateSession needs (the stream is marked open in storage, as the server's transport does).
 */
async function aSessionReadyDaemon(f: WalkFixture, owner: Owner): Promise<TestDaemon> {
  const daemon = await aDaemon(f, owner);
  await f.call(owner.caller, DaemonService.method.updateDaemon, {
    workspaceId: owner.workspaceId,
    id: daemon.id,
    status: DaemonStatus.ACCEPTED,
  });
  await grantLogin(f, owner, daemon.targetId, "ubuntu", PrincipalType.USER, [owner.caller.userId]);
  await f.storage.daemons.setOnline(daemon.id, "audit-walk/control-stream", f.clock.now());
  await callAsDaemon(f, daemon, DaemonService.method.syncDaemon, {
    users: ["ubuntu"],
    privateIps: [],
    metadata: {},
  });
  return daemon;
}

async function aCheckout(f: WalkFixture, owner: Owner): Promise<string> {
  await f.call(owner.caller, BillingService.method.createCheckout, { workspaceId: owner.workspaceId });
  return (await f.storage.billingAccounts.find(owner.workspaceId))!.customerId;
}

/** A CSR for a client certificate in `owner`'s name, as `openssl req` makes it. */
async function clientCsr(owner: Owner): Promise<string> {
  const files = await scratch();
  try {
    const key = join(files.dir, "leaf.key");
    const csr = join(files.dir, "leaf.csr");
    await run("openssl", ["genpkey", "-algorithm", "ED25519", "-out", key]);
    const cn = owner.email.split("@")[0]!;
    await run("openssl", ["req", "-new", "-key", key, "-subj", `/CN=${cn}`, "-out", csr]);
    return await readFile(csr, "utf8");
  } finally {
    await files.remove();
  }
}

/** Rows of a CSV export, without the header row. */
const csvRows = (data: Uint8Array) =>
  Buffer.from(data)
    .toString("utf8")
    .split("\r\n")
    .filter((line) => line !== "").length - 1;

// --- why some RPCs write no entry ---------------------------------------------------------------

/** RPCs that only read, which the contract leaves unmarked (so not NO_SIDE_EFFECTS). */
const readsOnly = "reads only; the contract does not mark it NO_SIDE_EFFECTS";

// --- the table -----------------------------------------------------------------------------------

const W = WorkspaceService.method;
const Dom = WorkspaceDomainService.method;
const Inv = InvitationService.method;
const Team = TeamService.method;
const SA = ServiceAccountService.method;
const Cert = CertificateService.method;
const Tgt = TargetService.method;
const Pr = PrincipalService.method;
const Dmn = DaemonService.method;
const Auth = AuthService.method;
const User = UserService.method;
const Cred = CredentialService.method;
const Sso = SSOService.method;
const Bill = BillingService.method;
const Util = UtilService.method;
const Rec = RecordingService.method;

const steps: ReadonlyArray<readonly [{ parent: { typeName: string }; name: string }, WalkStep]> = [
  // WorkspaceService
  [
    W.createWorkspace,
    {
      prepare: async (f) => {
        const { caller } = await f.signUp();
        return prepared(
          (facts) => f.invoke(caller, W.createWorkspace, { name: "Walk" }, facts),
          ({ workspace }) => [
            entry(caller.userId, "workspace.create", `workspace:${workspace!.id}`, workspace!.id),
          ],
        );
      },
    },
  ],
  [
    W.updateWorkspace,
    {
      prepare: async (f) => {
        const o = await f.owner();
        return prepared(
          (facts) =>
            f.invoke(o.caller, W.updateWorkspace, { workspaceId: o.workspaceId, name: "Renamed" }, facts),
          () => [entry(o.caller.userId, "workspace.update", `workspace:${o.workspaceId}`, o.workspaceId)],
        );
      },
    },
  ],
  [
    W.updateWorkspaceSettings,
    {
      prepare: async (f) => {
        const o = await f.owner();
        const request = { workspaceId: o.workspaceId, enrollAutoApprove: true };
        return prepared(
          (facts) => f.invoke(o.caller, W.updateWorkspaceSettings, request, facts),
          () => [
            entry(o.caller.userId, "workspace.settings.update", `workspace:${o.workspaceId}`, o.workspaceId),
          ],
        );
      },
    },
  ],
  [
    W.deleteWorkspace,
    {
      prepare: async (f) => {
        const o = await f.owner();
        return prepared(
          (facts) => f.invoke(o.caller, W.deleteWorkspace, { workspaceId: o.workspaceId }, facts),
          // Kept outside the workspace, whose own rows go with it.
          () => [entry(o.caller.userId, "workspace.delete", `workspace:${o.workspaceId}`, null)],
        );
      },
    },
  ],
  [
    W.removeWorkspaceMember,
    {
      prepare: async (f) => {
        const o = await f.owner();
        const m = await memberWithRole(f, o.workspaceId, "viewer");
        const request = { workspaceId: o.workspaceId, userId: m.caller.userId };
        return prepared(
          (facts) => f.invoke(o.caller, W.removeWorkspaceMember, request, facts),
          () => [entry(o.caller.userId, "member.remove", `user:${m.caller.userId}`, o.workspaceId)],
        );
      },
    },
  ],
  [
    W.updateWorkspaceMember,
    {
      prepare: async (f) => {
        const o = await f.owner();
        const m = await memberWithRole(f, o.workspaceId, "viewer");
        const request = { workspaceId: o.workspaceId, userId: m.caller.userId, roleName: "editor" };
        return prepared(
          (facts) => f.invoke(o.caller, W.updateWorkspaceMember, request, facts),
          () => [entry(o.caller.userId, "member.update", `user:${m.caller.userId}`, o.workspaceId)],
        );
      },
    },
  ],
  [
    W.updateWorkspaceOwner,
    {
      prepare: async (f) => {
        const o = await f.owner();
        const m = await memberWithRole(f, o.workspaceId, "admin");
        const request = { workspaceId: o.workspaceId, newOwner: m.caller.userId };
        return prepared(
          (facts) => f.invoke(o.caller, W.updateWorkspaceOwner, request, facts),
          () => [entry(o.caller.userId, "workspace.transfer", `user:${m.caller.userId}`, o.workspaceId)],
        );
      },
    },
  ],
  [
    W.subscribeWorkspaceEvents,
    { unaudited: "a server stream that delivers the workspace's events; it changes nothing" },
  ],

  // WorkspaceDomainService
  [
    Dom.createWorkspaceDomain,
    {
      prepare: async (f) => {
        const o = await f.owner();
        const domain = uniqueDomain();
        return prepared(
          (facts) =>
            f.invoke(o.caller, Dom.createWorkspaceDomain, { workspaceId: o.workspaceId, domain }, facts),
          () => [entry(o.caller.userId, "domain.create", `domain:${domain}`, o.workspaceId)],
        );
      },
    },
  ],
  ...(
    [
      [Dom.deleteWorkspaceDomain, "domain.delete"],
      [Dom.verifyWorkspaceDomain, "domain.verify"],
      [Dom.regenerateWorkspaceDomainToken, "domain.regenerate_token"],
    ] as const
  ).map(
    ([method, action]) =>
      [
        method,
        {
          prepare: async (f: WalkFixture) => {
            const o = await f.owner();
            const request = { workspaceId: o.workspaceId, domain: uniqueDomain() };
            const { domain } = await f.call(o.caller, Dom.createWorkspaceDomain, request);
            // The TXT record VerifyWorkspaceDomain looks for, on the walk's DNS server.
            f.network.zone.set(`_wap-challenge.${request.domain}`, [[domain!.verificationToken]]);
            return prepared(
              (facts) => invokeEither(f, o.caller, method, request, facts),
              () => [entry(o.caller.userId, action, `domain:${request.domain}`, o.workspaceId)],
            );
          },
        },
      ] as const,
  ),

  // InvitationService
  [
    Inv.refreshInviteToken,
    {
      prepare: async (f) => {
        const o = await f.owner();
        return prepared(
          (facts) => f.invoke(o.caller, Inv.refreshInviteToken, { workspaceId: o.workspaceId }, facts),
          () => [entry(o.caller.userId, "invitation.refresh", `workspace:${o.workspaceId}`, o.workspaceId)],
        );
      },
    },
  ],
  [
    Inv.revokeInviteToken,
    {
      prepare: async (f) => {
        const o = await f.owner();
        await f.call(o.caller, Inv.refreshInviteToken, { workspaceId: o.workspaceId });
        return prepared(
          (facts) => f.invoke(o.caller, Inv.revokeInviteToken, { workspaceId: o.workspaceId }, facts),
          () => [entry(o.caller.userId, "invitation.revoke", `workspace:${o.workspaceId}`, o.workspaceId)],
        );
      },
    },
  ],
  [
    Inv.getInvitation,
    {
      unaudited: `${readsOnly} (the public page an invitee lands on)`,
      prepare: async (f) => {
        const o = await f.owner();
        const { link } = await f.call(o.caller, Inv.refreshInviteToken, { workspaceId: o.workspaceId });
        const token = link.split("/").pop()!;
        return { call: (facts) => f.invoke(anonymous, Inv.getInvitation, { token }, facts) };
      },
    },
  ],
  [
    Inv.acceptInvitation,
    {
      prepare: async (f) => {
        const o = await f.owner();
        const { link } = await f.call(o.caller, Inv.refreshInviteToken, { workspaceId: o.workspaceId });
        const invitee = await f.signUp();
        const token = link.split("/").pop()!;
        return prepared(
          (facts) => f.invoke(invitee.caller, Inv.acceptInvitation, { token }, facts),
          () => [
            entry(invitee.caller.userId, "invitation.accept", `user:${invitee.caller.userId}`, o.workspaceId),
          ],
        );
      },
    },
  ],

  // TeamService
  [
    Team.createTeam,
    {
      prepare: async (f) => {
        const o = await f.owner();
        return prepared(
          (facts) =>
            f.invoke(o.caller, Team.createTeam, { workspaceId: o.workspaceId, name: "walkers" }, facts),
          ({ team }) => [entry(o.caller.userId, "team.create", `team:${team!.id}`, o.workspaceId)],
        );
      },
    },
  ],
  [
    Team.updateTeam,
    {
      prepare: async (f) => {
        const o = await f.owner();
        const team = await aTeam(f, o);
        const request = { workspaceId: o.workspaceId, id: team.id, name: "runners" };
        return prepared(
          (facts) => f.invoke(o.caller, Team.updateTeam, request, facts),
          () => [entry(o.caller.userId, "team.update", `team:${team.id}`, o.workspaceId)],
        );
      },
    },
  ],
  [
    Team.deleteTeam,
    {
      prepare: async (f) => {
        const o = await f.owner();
        const team = await aTeam(f, o);
        return prepared(
          (facts) => f.invoke(o.caller, Team.deleteTeam, { workspaceId: o.workspaceId, id: team.id }, facts),
          () => [entry(o.caller.userId, "team.delete", `team:${team.id}`, o.workspaceId)],
        );
      },
    },
  ],
  [
    Team.addTeamMember,
    {
      prepare: async (f) => {
        const o = await f.owner();
        const team = await aTeam(f, o);
        const m = await memberWithRole(f, o.workspaceId, "viewer");
        const request = { workspaceId: o.workspaceId, teamId: team.id, userId: m.caller.userId };
        return prepared(
          (facts) => f.invoke(o.caller, Team.addTeamMember, request, facts),
          () => [entry(o.caller.userId, "team.member.add", `team:${team.id}`, o.workspaceId)],
        );
      },
    },
  ],
  [
    Team.removeTeamMember,
    {
      prepare: async (f) => {
        const o = await f.owner();
        const team = await aTeam(f, o);
        const m = await memberWithRole(f, o.workspaceId, "viewer");
        const request = { workspaceId: o.workspaceId, teamId: team.id, userId: m.caller.userId };
        await f.call(o.caller, Team.addTeamMember, request);
        return prepared(
          (facts) => f.invoke(o.caller, Team.removeTeamMember, request, facts),
          () => [entry(o.caller.userId, "team.member.remove", `team:${team.id}`, o.workspaceId)],
        );
      },
    },
  ],

  // ServiceAccountService
  [
    SA.createServiceAccount,
    {
      prepare: async (f) => {
        const o = await f.owner();
        const request = { workspaceId: o.workspaceId, name: "ci", roleName: "editor" };
        return prepared(
          (facts) => f.invoke(o.caller, SA.createServiceAccount, request, facts),
          ({ serviceAccount }) => [
            entry(
              o.caller.userId,
              "service_account.create",
              `service_account:${serviceAccount!.id}`,
              o.workspaceId,
            ),
          ],
        );
      },
    },
  ],
  ...(
    [
      [SA.updateServiceAccount, "service_account.update", { description: "deploys" }],
      [SA.deleteServiceAccount, "service_account.delete", {}],
    ] as const
  ).map(
    ([method, action, change]) =>
      [
        method,
        {
          prepare: async (f: WalkFixture) => {
            const o = await f.owner();
            const sa = await serviceAccountCaller(f, o, "editor");
            const request = { workspaceId: o.workspaceId, id: sa.serviceAccountId, ...change };
            return prepared(
              (facts) => invokeEither(f, o.caller, method, request, facts),
              () => [entry(o.caller.userId, action, `service_account:${sa.serviceAccountId}`, o.workspaceId)],
            );
          },
        },
      ] as const,
  ),

  // CertificateService
  [
    Cert.createCertificateAuthority,
    {
      prepare: async (f) => {
        const o = await f.owner();
        const request = { workspaceId: o.workspaceId, name: "walk-ca", keyType: CertificateKeyType.ED25519 };
        return prepared(
          (facts) => f.invoke(o.caller, Cert.createCertificateAuthority, request, facts),
          ({ certificateAuthority: ca }) => [
            entry(
              o.caller.userId,
              "certificate_authority.create",
              `certificate_authority:${ca!.id}`,
              o.workspaceId,
            ),
          ],
        );
      },
    },
  ],
  ...(
    [
      [Cert.updateCertificateAuthority, "certificate_authority.update", { description: "for people" }],
      [Cert.deleteCertificateAuthority, "certificate_authority.delete", {}],
      [Cert.rolloverCertificateAuthority, "certificate_authority.rollover", {}],
    ] as const
  ).map(
    ([method, action, change]) =>
      [
        method,
        {
          prepare: async (f: WalkFixture) => {
            const o = await f.owner();
            const ca = await sshAuthority(f, o);
            const request = { workspaceId: o.workspaceId, id: ca.id, ...change };
            return prepared(
              (facts) => invokeEither(f, o.caller, method, request, facts),
              () => [entry(o.caller.userId, action, `certificate_authority:${ca.id}`, o.workspaceId)],
            );
          },
        },
      ] as const,
  ),
  [
    Cert.signSSHCertificate,
    {
      prepare: async (f) => {
        const o = await f.owner();
        const ca = await sshAuthority(f, o);
        const { line } = await subjectKey({ type: "ed25519" });
        const request = {
          workspaceId: o.workspaceId,
          caId: ca.id,
          type: SignSSHCertificateRequest_CertificateType.USER,
          publicKey: line,
        };
        return prepared(
          (facts) => f.invoke(o.caller, Cert.signSSHCertificate, request, facts),
          async () => {
            const ledger = await f.storage.issuedCertificates.list(o.workspaceId, { limit: 1, offset: 0 });
            const id = ledger.items[0]!.id;
            return [
              entry(o.caller.userId, "certificate.sign_ssh_user", `issued_certificate:${id}`, o.workspaceId),
            ];
          },
        );
      },
    },
  ],
  [
    Cert.signX509Certificate,
    {
      prepare: async (f) => {
        const o = await f.owner();
        const ca = await createAuthority(f, o, { type: "ed25519" }, { authorityType: AuthorityType.X509 });
        const request = {
          workspaceId: o.workspaceId,
          caId: ca.id,
          csr: await clientCsr(o),
          usage: SignX509CertificateRequest_X509Usage.CLIENT_AUTH,
        };
        return prepared(
          (facts) => f.invoke(o.caller, Cert.signX509Certificate, request, facts),
          async () => {
            const ledger = await f.storage.issuedCertificates.list(o.workspaceId, { limit: 1, offset: 0 });
            const id = ledger.items[0]!.id;
            return [
              entry(o.caller.userId, "certificate.sign_x509", `issued_certificate:${id}`, o.workspaceId),
            ];
          },
        );
      },
    },
  ],

  // TargetService
  [
    Tgt.createTarget,
    {
      prepare: async (f) => {
        const o = await f.owner();
        await sshAuthority(f, o);
        // A service account acts here: its entries name it, not a person.
        const sa = await serviceAccountCaller(f, o, "editor");
        return prepared(
          (facts) => f.invoke(sa, Tgt.createTarget, { workspaceId: o.workspaceId, name: "web-1" }, facts),
          ({ target }) => [
            entry(
              { type: "service_account", id: sa.serviceAccountId },
              "target.create",
              `target:${target!.id}`,
              o.workspaceId,
            ),
          ],
        );
      },
    },
  ],
  ...(
    [
      [Tgt.updateTarget, "target.update", { description: "the web server" }],
      [Tgt.deleteTarget, "target.delete", {}],
    ] as const
  ).map(
    ([method, action, change]) =>
      [
        method,
        {
          prepare: async (f: WalkFixture) => {
            const o = await f.owner();
            const target = await aTarget(f, o);
            const request = { workspaceId: o.workspaceId, id: target.id, ...change };
            return prepared(
              (facts) => invokeEither(f, o.caller, method, request, facts),
              () => [entry(o.caller.userId, action, `target:${target.id}`, o.workspaceId)],
            );
          },
        },
      ] as const,
  ),
  [
    Tgt.getSubjectAccess,
    {
      unaudited: readsOnly,
      prepare: async (f) => {
        const o = await f.owner();
        const request = { workspaceId: o.workspaceId, subjectId: o.caller.userId };
        return { call: (facts) => f.invoke(o.caller, Tgt.getSubjectAccess, request, facts) };
      },
    },
  ],

  // PrincipalService
  [
    Pr.setPrincipals,
    {
      prepare: async (f) => {
        const o = await f.owner();
        const target = await aTarget(f, o);
        const request = { workspaceId: o.workspaceId, targetId: target.id, usernames: ["ubuntu"] };
        return prepared(
          (facts) => f.invoke(o.caller, Pr.setPrincipals, request, facts),
          () => [entry(o.caller.userId, "principal.set", `target:${target.id}`, o.workspaceId)],
        );
      },
    },
  ],
  [
    Pr.addSubjectsToPrincipal,
    {
      prepare: async (f) => {
        const o = await f.owner();
        const target = await aTarget(f, o);
        const principal = await grantLogin(f, o, target.id, "ubuntu", PrincipalType.USER, []);
        const request = {
          workspaceId: o.workspaceId,
          id: principal,
          subjectIds: [o.caller.userId],
          type: PrincipalType.USER,
        };
        return prepared(
          (facts) => f.invoke(o.caller, Pr.addSubjectsToPrincipal, request, facts),
          () => [entry(o.caller.userId, "principal.grant", `principal:${principal}`, o.workspaceId)],
        );
      },
    },
  ],
  [
    Pr.removeSubjectsFromPrincipal,
    {
      prepare: async (f) => {
        const o = await f.owner();
        const target = await aTarget(f, o);
        const principal = await grantLogin(f, o, target.id, "ubuntu", PrincipalType.USER, [o.caller.userId]);
        const request = {
          workspaceId: o.workspaceId,
          id: principal,
          subjectIds: [o.caller.userId],
          type: PrincipalType.USER,
        };
        return prepared(
          (facts) => f.invoke(o.caller, Pr.removeSubjectsFromPrincipal, request, facts),
          () => [entry(o.caller.userId, "principal.revoke", `principal:${principal}`, o.workspaceId)],
        );
      },
    },
  ],
  [
    Pr.revokeAllAccess,
    {
      prepare: async (f) => {
        const o = await f.owner();
        const target = await aTarget(f, o);
        await grantLogin(f, o, target.id, "ubuntu", PrincipalType.USER, [o.caller.userId]);
        const request = { workspaceId: o.workspaceId, subjectId: o.caller.userId, type: PrincipalType.USER };
        return prepared(
          (facts) => f.invoke(o.caller, Pr.revokeAllAccess, request, facts),
          () => [entry(o.caller.userId, "access.revoke_all", `user:${o.caller.userId}`, o.workspaceId)],
        );
      },
    },
  ],

  // DaemonService
  [
    Dmn.updateDaemon,
    {
      prepare: async (f) => {
        const o = await f.owner();
        const d = await aDaemon(f, o);
        const request = { workspaceId: o.workspaceId, id: d.id, status: DaemonStatus.ACCEPTED };
        return prepared(
          (facts) => f.invoke(o.caller, Dmn.updateDaemon, request, facts),
          () => [entry(o.caller.userId, "daemon.update", `daemon:${d.id}`, o.workspaceId)],
        );
      },
    },
  ],
  [
    Dmn.deleteDaemon,
    {
      prepare: async (f) => {
        const o = await f.owner();
        const d = await aDaemon(f, o);
        // The daemon removes itself (its uninstall path): the entry names the daemon. Its signed
        // challenge is checked (and spent) before the operation, as the transport does.
        const self = await daemonCaller(f, d, Dmn.deleteDaemon);
        return prepared(
          (facts) => f.invoke(self, Dmn.deleteDaemon, {}, facts),
          () => [entry({ type: "daemon", id: d.id }, "daemon.delete", `daemon:${d.id}`, o.workspaceId)],
        );
      },
    },
  ],
  [
    Dmn.refreshEnrollToken,
    {
      prepare: async (f) => {
        const o = await f.owner();
        return prepared(
          (facts) => f.invoke(o.caller, Dmn.refreshEnrollToken, { workspaceId: o.workspaceId }, facts),
          () => [
            entry(
              o.caller.userId,
              "daemon.enroll_token.refresh",
              `workspace:${o.workspaceId}`,
              o.workspaceId,
            ),
          ],
        );
      },
    },
  ],
  [
    Dmn.revokeEnrollToken,
    {
      prepare: async (f) => {
        const o = await f.owner();
        await f.call(o.caller, Dmn.refreshEnrollToken, { workspaceId: o.workspaceId });
        return prepared(
          (facts) => f.invoke(o.caller, Dmn.revokeEnrollToken, { workspaceId: o.workspaceId }, facts),
          () => [
            entry(o.caller.userId, "daemon.enroll_token.revoke", `workspace:${o.workspaceId}`, o.workspaceId),
          ],
        );
      },
    },
  ],
  [
    Dmn.enrollDaemon,
    {
      prepare: async (f) => {
        const o = await f.owner();
        await sshAuthority(f, o);
        const { token } = await f.call(o.caller, Dmn.refreshEnrollToken, { workspaceId: o.workspaceId });
        const request = { token, caId: "", authMethod: "soft", authPubkey: aDaemonKey().pem };
        const headers = { "platform-daemon-hostname": "web-1" };
        return prepared(
          (facts) => f.invoke(anonymous, Dmn.enrollDaemon, request, facts, headers),
          // The daemon has no identity yet: the entry is anonymous, in the token's workspace.
          ({ id }) => [entry({ type: "anonymous", id: "" }, "daemon.enroll", `daemon:${id}`, o.workspaceId)],
        );
      },
    },
  ],
  [
    Dmn.syncDaemon,
    {
      prepare: async (f) => {
        const o = await f.owner();
        const d = await aDaemon(f, o);
        const request = { users: ["ubuntu"], privateIps: ["10.0.0.5:4022"], metadata: { os: "linux" } };
        const self = await daemonCaller(f, d, Dmn.syncDaemon);
        return prepared(
          (facts) => f.invoke(self, Dmn.syncDaemon, request, facts),
          () => [entry({ type: "daemon", id: d.id }, "daemon.sync", `daemon:${d.id}`, o.workspaceId)],
        );
      },
    },
  ],
  [
    Dmn.createSession,
    {
      prepare: async (f) => {
        const o = await f.owner();
        const d = await aSessionReadyDaemon(f, o);
        const request = { workspaceId: o.workspaceId, daemonId: d.id, username: "ubuntu" };
        return prepared(
          (facts) => f.invoke(o.caller, Dmn.createSession, request, facts),
          ({ session }) => [
            entry(o.caller.userId, "session.create", `session:${session!.sessionId}`, o.workspaceId),
          ],
        );
      },
    },
  ],
  [
    Dmn.closeSession,
    {
      prepare: async (f) => {
        const o = await f.owner();
        const d = await aSessionReadyDaemon(f, o);
        const { session } = await f.call(o.caller, Dmn.createSession, {
          workspaceId: o.workspaceId,
          daemonId: d.id,
          username: "ubuntu",
        });
        const request = { workspaceId: o.workspaceId, daemonId: d.id, sessionId: session!.sessionId };
        return prepared(
          (facts) => f.invoke(o.caller, Dmn.closeSession, request, facts),
          () => [entry(o.caller.userId, "session.close", `session:${session!.sessionId}`, o.workspaceId)],
        );
      },
    },
  ],
  [
    DaemonControlService.method.connect,
    {
      unaudited:
        "the daemon's control stream, served by the server's transport: it marks the daemon online and " +
        "carries notifications and session pushes; the sessions it carries are audited by CreateSession " +
        "and CloseSession",
    },
  ],
  [
    DaemonSessionService.method.session,
    {
      unaudited:
        "the terminal relay of one session, served by the server's transport; opening the session " +
        "(CreateSession) and closing it from the platform (CloseSession) are audited",
    },
  ],

  // AuthService
  [
    Auth.register,
    {
      prepare: async (f) => {
        const email = "grace@example.com";
        const request = { name: "Grace Hopper", email, username: "grace", password };
        return prepared(
          (facts) => f.invoke(anonymous, Auth.register, request, facts),
          // No one is signed in yet: the entry names the account the call created.
          async () => {
            const user = (await f.storage.users.findByEmail(email))!;
            return [entry(user.id, "user.register", `user:${user.id}`, null)];
          },
        );
      },
    },
  ],
  [
    Auth.login,
    {
      prepare: async (f) => {
        const u = await f.signUp();
        return prepared(
          (facts) => f.invoke(anonymous, Auth.login, { email: u.email, password }, facts),
          async ({ accessToken }) => [
            entry(u.caller.userId, "user.login", `session:${await sessionOf(f, accessToken)}`, null),
          ],
        );
      },
    },
  ],
  [
    Auth.loginWithBackupCode,
    {
      committedFirst: {
        tables: ["login_throttles"],
        why: "a sign-in attempt is counted before the code is checked, whatever comes of it (throttling)",
      },
      prepare: async (f) => {
        const u = await f.signUp();
        const { codes } = await f.call(u.caller, Cred.createBackupCodes, {});
        return prepared(
          (facts) =>
            f.invoke(anonymous, Auth.loginWithBackupCode, { email: u.email, code: codes[0]! }, facts),
          async ({ accessToken }) => [
            entry(
              u.caller.userId,
              "user.login.backup_code",
              `session:${await sessionOf(f, accessToken)}`,
              null,
            ),
          ],
        );
      },
    },
  ],
  [
    Auth.logout,
    {
      prepare: async (f) => {
        const u = await f.signUp();
        return prepared(
          (facts) => f.invoke(u.caller, Auth.logout, {}, facts),
          () => [entry(u.caller.userId, "user.logout", `session:${u.caller.sessionId}`, null)],
        );
      },
    },
  ],
  [
    Auth.refreshToken,
    {
      unaudited:
        "rotates the refresh token of a session whose start is audited (user.login); an entry per " +
        "access-token lifetime of every client would bury the log",
      prepare: async (f) => {
        const u = await f.signUp();
        const request = { refreshToken: u.tokens.refreshToken };
        return { call: (facts) => f.invoke(anonymous, Auth.refreshToken, request, facts) };
      },
    },
  ],
  [
    Auth.forgotPassword,
    {
      unaudited:
        "mails a reset link and answers the same whether or not the account exists; the reset itself " +
        "is audited (user.password.reset)",
      prepare: async (f) => {
        const u = await f.signUp();
        return { call: (facts) => f.invoke(anonymous, Auth.forgotPassword, { email: u.email }, facts) };
      },
    },
  ],
  [
    Auth.resetPassword,
    {
      prepare: async (f) => {
        const u = await f.signUp();
        await f.call(anonymous, Auth.forgotPassword, { email: u.email });
        const token = await mailedToken(f, u.email, "/reset-password");
        const request = { token, newPassword: "a brand new passphrase" };
        return prepared(
          (facts) => f.invoke(anonymous, Auth.resetPassword, request, facts),
          () => [entry(u.caller.userId, "user.password.reset", `user:${u.caller.userId}`, null)],
        );
      },
    },
  ],
  [
    Auth.resendVerification,
    {
      unaudited:
        "mails the verification link again and answers the same whether or not the account exists; " +
        "the verification itself is audited (user.email.verify)",
      prepare: async (f) => {
        const u = await f.signUp();
        return { call: (facts) => f.invoke(anonymous, Auth.resendVerification, { email: u.email }, facts) };
      },
    },
  ],
  [
    Auth.verifyEmail,
    {
      prepare: async (f) => {
        const u = await f.signUp();
        const token = await mailedToken(f, u.email, "/verify-email");
        return prepared(
          (facts) => f.invoke(anonymous, Auth.verifyEmail, { token }, facts),
          () => [entry(u.caller.userId, "user.email.verify", `user:${u.caller.userId}`, null)],
        );
      },
    },
  ],
  [
    Auth.streamCLILogin,
    {
      unaudited:
        "a server stream served by the server's transport: it registers a pending login that expires " +
        "within minutes; its approval is audited by VerifyCLILogin (user.device.login)",
    },
  ],
  [
    Auth.verifyCLILogin,
    {
      prepare: async (f) => {
        const u = await f.signUp();
        const deviceId = randomUUID();
        const pending = await startCliLogin(f.platform.services, createCallContext(anonymous), {
          authMethod: "soft",
          authPubkey: aDaemonKey().pem,
          deviceId,
        });
        const loginCode = new URL(pending.verificationUrl).searchParams.get("code")!;
        return prepared(
          (facts) => f.invoke(u.caller, Auth.verifyCLILogin, { loginCode }, facts),
          () => [entry(u.caller.userId, "user.device.login", `device:${deviceId}`, null)],
        );
      },
    },
  ],
  [
    Auth.beginPasskeyLogin,
    {
      unaudited: "hands out a short-lived challenge; the sign-in it leads to is audited (user.login.passkey)",
      prepare: async (f) => ({ call: (facts) => f.invoke(anonymous, Auth.beginPasskeyLogin, {}, facts) }),
    },
  ],
  [
    Auth.finishPasskeyLogin,
    {
      committedFirst: {
        tables: ["one_time_tokens"],
        why: "the challenge is spent before the response is checked, whatever comes of it, so no response is replayed",
      },
      prepare: async (f) => {
        const u = await f.signUp();
        const { key } = await withPasskey(f, u.caller);
        const { optionsJson } = await f.call(anonymous, Auth.beginPasskeyLogin, {});
        const request = { credentialJson: key.get(optionsJson) };
        return prepared(
          (facts) => f.invoke(anonymous, Auth.finishPasskeyLogin, request, facts),
          async ({ accessToken }) => [
            entry(u.caller.userId, "user.login.passkey", `session:${await sessionOf(f, accessToken)}`, null),
          ],
        );
      },
    },
  ],

  // UserService
  ...[User.whoami, User.listUserDevices, User.listLinkedAccounts].map(
    (method) =>
      [
        method,
        {
          unaudited: readsOnly,
          prepare: async (f: WalkFixture) => {
            const u = await f.signUp();
            return { call: (facts: RequestFacts) => invokeEither(f, u.caller, method, {}, facts) };
          },
        },
      ] as const,
  ),
  [
    User.updateProfile,
    {
      prepare: async (f) => {
        const u = await f.signUp();
        return prepared(
          (facts) => f.invoke(u.caller, User.updateProfile, { name: "Ada King" }, facts),
          () => [entry(u.caller.userId, "user.profile.update", `user:${u.caller.userId}`, null)],
        );
      },
    },
  ],
  [
    User.deleteAccount,
    {
      prepare: async (f) => {
        const u = await f.signUp();
        return prepared(
          (facts) => f.invoke(u.caller, User.deleteAccount, {}, facts),
          () => [entry(u.caller.userId, "user.delete", `user:${u.caller.userId}`, null)],
        );
      },
    },
  ],
  [
    User.deleteUserDevice,
    {
      prepare: async (f) => {
        const u = await f.signUp();
        // A second sign-in: the browser session signed out from the first.
        const other = await f.call(anonymous, Auth.login, { email: u.email, password });
        const id = await sessionOf(f, other.accessToken);
        return prepared(
          (facts) => f.invoke(u.caller, User.deleteUserDevice, { id }, facts),
          () => [entry(u.caller.userId, "user.device.delete", `session:${id}`, null)],
        );
      },
    },
  ],
  [
    User.unlinkAccount,
    {
      prepare: async (f) => {
        const u = await f.signUp();
        await f.storage.linkedAccounts.insert({
          userId: u.caller.userId,
          provider: "github",
          providerId: "4242",
          providerEmail: u.email,
          providerUsername: "walker",
          protocol: "oauth",
          createdAt: f.clock.now(),
        });
        return prepared(
          (facts) => f.invoke(u.caller, User.unlinkAccount, { provider: "github" }, facts),
          () => [entry(u.caller.userId, "user.linked_account.delete", "linked_account:github", null)],
        );
      },
    },
  ],
  [
    User.setEmailRecovery,
    {
      prepare: async (f) => {
        const u = await f.signUp();
        return prepared(
          (facts) => f.invoke(u.caller, User.setEmailRecovery, { enable: true }, facts),
          () => [entry(u.caller.userId, "user.email_recovery.enable", `user:${u.caller.userId}`, null)],
        );
      },
    },
  ],

  // CredentialService
  [
    Cred.updatePassword,
    {
      prepare: async (f) => {
        const u = await f.signUp();
        const request = { currentPassword: password, newPassword: "another fine passphrase" };
        return prepared(
          (facts) => f.invoke(u.caller, Cred.updatePassword, request, facts),
          () => [entry(u.caller.userId, "user.password.update", `user:${u.caller.userId}`, null)],
        );
      },
    },
  ],
  [
    Cred.deletePassword,
    {
      prepare: async (f) => {
        const u = await f.signUp();
        await withPasskey(f, u.caller);
        return prepared(
          (facts) => f.invoke(u.caller, Cred.deletePassword, { currentPassword: password }, facts),
          () => [entry(u.caller.userId, "user.password.delete", `user:${u.caller.userId}`, null)],
        );
      },
    },
  ],
  ...[Cred.listPasskeys, Cred.listBackupCodes].map(
    (method) =>
      [
        method,
        {
          unaudited: readsOnly,
          prepare: async (f: WalkFixture) => {
            const u = await f.signUp();
            return { call: (facts: RequestFacts) => invokeEither(f, u.caller, method, {}, facts) };
          },
        },
      ] as const,
  ),
  [
    Cred.updatePasskey,
    {
      prepare: async (f) => {
        const u = await f.signUp();
        const { passkey } = await withPasskey(f, u.caller);
        return prepared(
          (facts) => f.invoke(u.caller, Cred.updatePasskey, { id: passkey.id, name: "Desk key" }, facts),
          () => [entry(u.caller.userId, "user.passkey.update", `passkey:${passkey.id}`, null)],
        );
      },
    },
  ],
  [
    Cred.deletePasskey,
    {
      prepare: async (f) => {
        const u = await f.signUp();
        const { passkey } = await withPasskey(f, u.caller);
        return prepared(
          (facts) => f.invoke(u.caller, Cred.deletePasskey, { id: passkey.id }, facts),
          () => [entry(u.caller.userId, "user.passkey.delete", `passkey:${passkey.id}`, null)],
        );
      },
    },
  ],
  [
    Cred.createBackupCodes,
    {
      prepare: async (f) => {
        const u = await f.signUp();
        return prepared(
          (facts) => f.invoke(u.caller, Cred.createBackupCodes, {}, facts),
          () => [entry(u.caller.userId, "user.backup_codes.create", `user:${u.caller.userId}`, null)],
        );
      },
    },
  ],
  [
    Cred.deleteBackupCodes,
    {
      prepare: async (f) => {
        const u = await f.signUp();
        await f.call(u.caller, Cred.createBackupCodes, {});
        return prepared(
          (facts) => f.invoke(u.caller, Cred.deleteBackupCodes, {}, facts),
          () => [entry(u.caller.userId, "user.backup_codes.delete", `user:${u.caller.userId}`, null)],
        );
      },
    },
  ],
  [
    Cred.beginPasskeyRegistration,
    {
      unaudited:
        "hands out a short-lived challenge; the passkey it leads to is audited (user.passkey.create)",
      prepare: async (f) => {
        const u = await f.signUp();
        return { call: (facts) => f.invoke(u.caller, Cred.beginPasskeyRegistration, {}, facts) };
      },
    },
  ],
  [
    Cred.finishPasskeyRegistration,
    {
      committedFirst: {
        tables: ["one_time_tokens"],
        why: "the challenge is spent before the response is checked, whatever comes of it, so no response is replayed",
      },
      prepare: async (f) => {
        const u = await f.signUp();
        const key = createSoftwareAuthenticator({ origin: publicBaseUrl });
        const { optionsJson } = await f.call(u.caller, Cred.beginPasskeyRegistration, {});
        const request = { credentialJson: key.create(optionsJson), name: "Laptop" };
        return prepared(
          (facts) => f.invoke(u.caller, Cred.finishPasskeyRegistration, request, facts),
          ({ passkey }) => [entry(u.caller.userId, "user.passkey.create", `passkey:${passkey!.id}`, null)],
        );
      },
    },
  ],

  // SSOService
  [
    Sso.updateOIDCProvider,
    {
      prepare: async (f) => {
        const o = await f.owner();
        const request = {
          workspaceId: o.workspaceId,
          name: "Corporate IdP",
          issuerUrl: "https://idp.example.com",
          clientId: "wap",
          clientSecret: "a client secret",
          scopes: ["openid", "email"],
        };
        return prepared(
          (facts) => f.invoke(o.caller, Sso.updateOIDCProvider, request, facts),
          async () => {
            const { id } = (await f.storage.oidcProviders.find(o.workspaceId))!;
            return [entry(o.caller.userId, "sso.oidc.create", `oidc_provider:${id}`, o.workspaceId)];
          },
        );
      },
    },
  ],
  [
    Sso.updateSAMLProvider,
    {
      prepare: async (f) => {
        const o = await f.owner();
        const request = {
          workspaceId: o.workspaceId,
          name: "Corporate IdP",
          metadataUrl: "https://idp.example.com/saml/metadata",
        };
        return prepared(
          (facts) => f.invoke(o.caller, Sso.updateSAMLProvider, request, facts),
          async () => {
            const { id } = (await f.storage.samlProviders.find(o.workspaceId))!;
            return [entry(o.caller.userId, "sso.saml.create", `saml_provider:${id}`, o.workspaceId)];
          },
        );
      },
    },
  ],
  [
    Sso.checkSSO,
    {
      unaudited: `${readsOnly} (public: a sign-in page asks before anyone signs in)`,
      prepare: async (f) => ({
        call: (facts) => f.invoke(anonymous, Sso.checkSSO, { email: "someone@example.com" }, facts),
      }),
    },
  ],

  // BillingService (against the walk's fake Stripe)
  [
    Bill.createCheckout,
    {
      prepare: async (f) => {
        const o = await f.owner();
        return prepared(
          (facts) => f.invoke(o.caller, Bill.createCheckout, { workspaceId: o.workspaceId }, facts),
          async () => {
            const { customerId } = (await f.storage.billingAccounts.find(o.workspaceId))!;
            return [
              entry(
                o.caller.userId,
                "billing.checkout.create",
                `billing_customer:${customerId}`,
                o.workspaceId,
              ),
            ];
          },
        );
      },
    },
  ],
  [
    Bill.createPortal,
    {
      prepare: async (f) => {
        const o = await f.owner();
        const customerId = await aCheckout(f, o);
        return prepared(
          (facts) => f.invoke(o.caller, Bill.createPortal, { workspaceId: o.workspaceId }, facts),
          () => [
            entry(o.caller.userId, "billing.portal.create", `billing_customer:${customerId}`, o.workspaceId),
          ],
        );
      },
    },
  ],
  [
    Bill.cancelSubscription,
    {
      prepare: async (f) => {
        const o = await f.owner();
        const customerId = await aCheckout(f, o);
        const subscriptionId = `sub_walk_${randomUUID().slice(0, 8)}`;
        const account = (await f.storage.billingAccounts.find(o.workspaceId))!;
        await f.storage.billingAccounts.upsert({ ...account, subscriptionId, status: "active" });
        f.network.stripe.subscriptions.set(subscriptionId, {
          id: subscriptionId,
          customer: customerId,
          status: "active",
          cancel_at_period_end: false,
          current_period_end: Math.floor(f.clock.now().getTime() / 1000) + 30 * 86_400,
          metadata: { workspace_id: o.workspaceId },
          product: { id: "prod_team", name: "Team" },
        });
        return prepared(
          (facts) => f.invoke(o.caller, Bill.cancelSubscription, { workspaceId: o.workspaceId }, facts),
          () => [
            entry(
              o.caller.userId,
              "billing.subscription.cancel_at_period_end",
              `billing_subscription:${subscriptionId}`,
              o.workspaceId,
            ),
          ],
        );
      },
    },
  ],

  // UtilService
  [
    Util.exportAuditLogs,
    {
      prepare: async (f) => {
        const o = await f.owner();
        return prepared(
          (facts) => f.invoke(o.caller, Util.exportAuditLogs, { workspaceId: o.workspaceId }, facts),
          ({ data }) => [
            entry(o.caller.userId, "audit.export", `audit_export:csv:${csvRows(data)}`, o.workspaceId),
          ],
        );
      },
    },
  ],

  // RecordingService
  [
    Rec.deleteRecording,
    {
      prepare: async (f) => {
        const o = await f.owner();
        const d = await aDaemon(f, o);
        const now = f.clock.now();
        const id = randomUUID();
        const session = {
          workspaceId: o.workspaceId,
          daemonId: d.id,
          userId: o.caller.userId,
          username: "ubuntu",
        };
        await f.storage.daemonSessions.insert({
          ...session,
          id,
          state: "closed",
          createdAt: now,
          openedAt: now,
          closedAt: now,
          closeReason: "exit",
        });
        await f.storage.recordings.insert({
          ...session,
          id,
          targetId: d.targetId,
          format: "asciicast-v2",
          sizeBytes: 0,
          chunkCount: 0,
          complete: true,
          truncated: false,
          startedAt: now,
          endedAt: now,
        });
        const request = { workspaceId: o.workspaceId, recordingId: id };
        return prepared(
          (facts) => f.invoke(o.caller, Rec.deleteRecording, request, facts),
          () => [entry(o.caller.userId, "recording.delete", `recording:${id}`, o.workspaceId)],
        );
      },
    },
  ],
];

/** The walk's table by procedure (`/platform.v1.Service/Method`). */
export const walkSteps: ReadonlyMap<string, WalkStep> = new Map(
  steps.map(([method, step]) => [procedureOf(method), step]),
);
