/**
 * The audit walk's table: for every RPC of the contract that is not NO_SIDE_EFFECTS, how to make
 * one call of it succeed in a fresh fixture and the audit entries it must leave, or why it
 * leaves none. audit-walk.test.ts fails for a mutating RPC missing here.
 */

import { createHash, randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { DescMessage, DescMethodUnary, MessageInitShape, MessageShape } from "@bufbuild/protobuf";
import {
  AccessRequestService,
  AuthorityType,
  AuthService,
  BillingService,
  CertificateKeyType,
  CertificateService,
  CredentialService,
  DaemonControlService,
  DaemonService,
  DaemonSessionService,
  DaemonStatus,
  GrantKind,
  InvitationService,
  PrincipalService,
  PrincipalType,
  RecordingService,
  RotationPhase,
  ServiceAccountService,
  SessionKind,
  SignSSHCertificateRequest_CertificateType,
  SignX509CertificateRequest_X509Usage,
  SSOService,
  TargetService,
  TeamService,
  UserService,
  UtilService,
  WebhookService,
  WorkspaceDomainService,
  WorkspaceService,
} from "@wap/api";
import { expect } from "vitest";
import { issuanceResource } from "../../src/certificates/issuance/record.js";
import { type Caller, createCallContext, type UserCaller } from "../../src/context.js";
import { startCliLogin } from "../../src/devices/cli-login.js";
import { procedureOf } from "../../src/platform/platform.js";
import { memberWithRole, type Owner, serviceAccountCaller, sshAuthority } from "./access.js";
import { linkParam, publicBaseUrl } from "./accounts.js";
import type {
  AuditedStep,
  ExpectedEntry,
  PreparedCall,
  RequestFacts,
  WalkFixture,
  WalkStep,
} from "./audit-walk.js";
import { createSoftwareAuthenticator } from "./authenticator.js";
import { createAuthority, run, scratch, subjectKey } from "./certificates.js";
import {
  aDaemonKey,
  callAsDaemon,
  daemonCaller,
  enrolledDaemon,
  grantLogin,
  type TestDaemon,
} from "./daemons.js";

// --- helpers -------------------------------------------------------------------------------------

const anonymous: Caller = { kind: "anonymous" };
const password = "correct horse battery";

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

// --- step builders -------------------------------------------------------------------------------

type Row = readonly [{ parent: { typeName: string }; name: string }, WalkStep];
type SignedUp = Awaited<ReturnType<WalkFixture["signUp"]>>;

/**
 * One of several methods a row of the table treats alike (their requests differ only in the
 * fields given); TypeScript cannot pair a union of descriptors with its requests.
 */
const either = (method: unknown) => method as DescMethodUnary<DescMessage, DescMessage>;

/** What a step's call sends, as whom (its builder's person unless told), and what its entry names. */
interface Arranged<I extends DescMessage, O extends DescMessage> {
  readonly caller?: Caller;
  readonly request: MessageInitShape<I>;
  /** The resource of the call's one entry, or how the response (or storage after it) names it. */
  readonly resource: string | ((response: MessageShape<O>) => string | Promise<string>);
}

/** The call `arranged` describes, leaving the one entry `entryOf` makes of its resource. */
function oneEntry<I extends DescMessage, O extends DescMessage>(
  f: WalkFixture,
  method: DescMethodUnary<I, O>,
  arranged: Arranged<I, O>,
  caller: Caller,
  entryOf: (resource: string) => ExpectedEntry,
): PreparedCall {
  const { resource } = arranged;
  return prepared(
    (facts) => f.invoke(arranged.caller ?? caller, method, arranged.request, facts),
    async (response) => [entryOf(typeof resource === "string" ? resource : await resource(response))],
  );
}

/**
 * A call the owner of a fresh workspace makes, leaving one entry of `action` by the owner in the
 * workspace; `arrange` sets up what it needs.
 */
function ownerStep<I extends DescMessage, O extends DescMessage>(
  method: DescMethodUnary<I, O>,
  action: string,
  arrange: (f: WalkFixture, o: Owner) => Arranged<I, O> | Promise<Arranged<I, O>>,
): Row {
  return [
    method,
    {
      prepare: async (f) => {
        const o = await f.owner();
        return oneEntry(f, method, await arrange(f, o), o.caller, (resource) =>
          entry(o.caller.userId, action, resource, o.workspaceId),
        );
      },
    },
  ];
}

/** `row` with tables it commits before its entry's transaction. */
function withCommittedFirst(row: Row, committedFirst: NonNullable<AuditedStep["committedFirst"]>): Row {
  const [method, step] = row;
  return [method, { ...(step as AuditedStep), committedFirst }];
}

/**
 * A call about a fresh account (made by the user unless `arrange` names another caller), leaving
 * one account-level entry of `action` by the user.
 */
function userStep<I extends DescMessage, O extends DescMessage>(
  method: DescMethodUnary<I, O>,
  action: string,
  arrange: (f: WalkFixture, u: SignedUp) => Arranged<I, O> | Promise<Arranged<I, O>>,
  more: Pick<AuditedStep, "committedFirst"> = {},
): Row {
  return [
    method,
    {
      ...more,
      prepare: async (f) => {
        const u = await f.signUp();
        return oneEntry(f, method, await arrange(f, u), u.caller, (resource) =>
          entry(u.caller.userId, action, resource, null),
        );
      },
    },
  ];
}

/**
 * Owner steps that each change one existing `kind` (made by `existing`, which returns its id):
 * per row, the method, its action and the request's fields beyond the workspace and id.
 */
function changeByIdSteps(
  kind: string,
  rows: ReadonlyArray<readonly [unknown, string, Record<string, unknown>]>,
  existing: (f: WalkFixture, o: Owner) => Promise<string>,
): Row[] {
  return rows.map(([method, action, change]) =>
    ownerStep(either(method), action, async (f, o) => {
      const id = await existing(f, o);
      return { request: { workspaceId: o.workspaceId, id, ...change }, resource: `${kind}:${id}` };
    }),
  );
}

/** A call that writes no entry, for the reason `unaudited`; `arrange` makes one that succeeds. */
function unauditedStep<I extends DescMessage, O extends DescMessage>(
  method: DescMethodUnary<I, O>,
  unaudited: string,
  arrange: (f: WalkFixture) => Promise<{ caller: Caller; request: MessageInitShape<I> }>,
): Row {
  return [
    method,
    {
      unaudited,
      prepare: async (f) => {
        const { caller, request } = await arrange(f);
        return { call: (facts) => f.invoke(caller, method, request, facts) };
      },
    },
  ];
}

/** A request naming only the owner's workspace, whose entry names the workspace. */
const theWorkspace = (o: Owner) => ({
  request: { workspaceId: o.workspaceId },
  resource: `workspace:${o.workspaceId}`,
});

/** A read by a fresh user with an empty request. */
const readBySignedUpUser = async (f: WalkFixture) => ({ caller: (await f.signUp()).caller, request: {} });

/** The resource a session's sign-in entry names. */
const sessionOfResponse =
  (f: WalkFixture) =>
  async ({ accessToken }: { accessToken: string }) =>
    `session:${await sessionOf(f, accessToken)}`;

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

/** A webhook endpoint at a documentation address: refused by the outbound rules, nothing leaves. */
async function aWebhook(f: WalkFixture, owner: Owner) {
  const { endpoint } = await f.call(owner.caller, WebhookService.method.createWebhookEndpoint, {
    workspaceId: owner.workspaceId,
    url: "https://192.0.2.1/hooks",
  });
  return endpoint!.id;
}

async function aTarget(f: WalkFixture, owner: Owner) {
  await sshAuthority(f, owner);
  const { target } = await f.call(owner.caller, TargetService.method.createTarget, {
    workspaceId: owner.workspaceId,
    name: `target-${randomUUID().slice(0, 8)}`,
  });
  return target!;
}

const aDaemon = (f: WalkFixture, owner: Owner) => enrolledDaemon(f, owner, "web-1");

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

/** A session-ready daemon and a certificate of its target's authority for `owner`, as sshd would see a login. */
async function anSshLogin(f: WalkFixture, owner: Owner) {
  const daemon = await aSessionReadyDaemon(f, owner);
  const target = await f.storage.targets.findById(owner.workspaceId, daemon.targetId);
  const { line } = await subjectKey({ type: "ed25519" });
  const { signedCertificate } = await f.call(owner.caller, CertificateService.method.signSSHCertificate, {
    workspaceId: owner.workspaceId,
    caId: target!.caId,
    type: SignSSHCertificateRequest_CertificateType.USER,
    publicKey: line,
  });
  const begin = {
    certificate: signedCertificate,
    username: "ubuntu",
    clientAddress: "203.0.113.9:50022",
    kind: SessionKind.EXEC,
    command: "uptime",
  };
  return { daemon, begin };
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
    // A client certificate's CN is its holder's id.
    await run("openssl", ["req", "-new", "-key", key, "-subj", `/CN=${owner.caller.userId}`, "-out", csr]);
    return await readFile(csr, "utf8");
  } finally {
    await files.remove();
  }
}

/** The entry resource of the certificate most recently issued in `owner`'s workspace. */
async function latestIssuedCertificate(f: WalkFixture, owner: Owner): Promise<string> {
  const ledger = await f.storage.issuedCertificates.list(owner.workspaceId, { limit: 1, offset: 0 });
  // The resource names the serial, the principals and the target, not only the ledger entry.
  const entry = ledger.items[0]!;
  const resource = issuanceResource(entry);
  expect(resource).toContain(`serial=${entry.serial}`);
  expect(resource).toContain(`principals=${entry.principals.join(",")}`);
  return resource;
}

/** A request that adds or removes `owner` as a subject of `principal`. */
const grantToOwner = (owner: Owner, principal: string) => ({
  workspaceId: owner.workspaceId,
  id: principal,
  subjectIds: [owner.caller.userId],
  type: PrincipalType.USER,
});

/** A login of the owner whose grant requires a passkey step-up, and the owner's passkey. */
async function aStepUpLogin(f: WalkFixture, o: Owner) {
  const target = await aTarget(f, o);
  const principal = await grantLogin(f, o, target.id, "ubuntu", PrincipalType.USER, []);
  await f.call(o.caller, Pr.addSubjectsToPrincipal, {
    ...grantToOwner(o, principal),
    limits: { requireStepUp: true },
  });
  const { key, passkey } = await withPasskey(f, o.caller);
  return { targets: [{ targetId: target.id, login: "ubuntu" }], key, passkey };
}

/** The recording of a closed session on `daemon`, written straight to storage; returns its id. */
async function aClosedSessionRecording(f: WalkFixture, owner: Owner, daemon: TestDaemon): Promise<string> {
  const now = f.clock.now();
  const id = randomUUID();
  const session = {
    workspaceId: owner.workspaceId,
    daemonId: daemon.id,
    userId: owner.caller.userId,
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
    targetId: daemon.targetId,
    format: "asciicast-v2",
    sizeBytes: 0,
    chunkCount: 0,
    complete: true,
    truncated: false,
    startedAt: now,
    endedAt: now,
  });
  return id;
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

/** Passkey ceremonies spend their challenge before the response is checked. */
const challengeSpentFirst = {
  tables: ["one_time_tokens"],
  why: "the challenge is spent before the response is checked, whatever comes of it, so no response is replayed",
};

// --- the table -----------------------------------------------------------------------------------

const W = WorkspaceService.method;
const Dom = WorkspaceDomainService.method;
const Inv = InvitationService.method;
const Team = TeamService.method;
const SA = ServiceAccountService.method;
const Cert = CertificateService.method;
const Tgt = TargetService.method;
const Pr = PrincipalService.method;
const Req = AccessRequestService.method;
const Hook = WebhookService.method;

/** An on-request grant of a new target's `ubuntu` to `userId`, approved by owners, twice. */
async function anOnRequestGrant(f: WalkFixture, o: Owner, userId: string) {
  const target = await aTarget(f, o);
  const principal = await grantLogin(f, o, target.id, "ubuntu", PrincipalType.USER, []);
  await f.call(o.caller, Pr.addSubjectsToPrincipal, {
    workspaceId: o.workspaceId,
    id: principal,
    subjectIds: [userId],
    type: PrincipalType.USER,
    kind: GrantKind.ON_REQUEST,
    approval: { maxDuration: { seconds: 3600n, nanos: 0 }, approverRoles: ["owner"], approvalsRequired: 2 },
  });
  return {
    targetId: target.id,
    workspaceId: o.workspaceId,
    login: "ubuntu",
    duration: { seconds: 600n, nanos: 0 },
  };
}

/** A viewer's pending request under {@link anOnRequestGrant}. */
async function aPendingRequest(f: WalkFixture, o: Owner) {
  const viewer = await memberWithRole(f, o.workspaceId, "viewer");
  const ask = await anOnRequestGrant(f, o, viewer.caller.userId);
  const { request } = await f.call(viewer.caller, Req.createAccessRequest, { ...ask, reason: "walk" });
  return request!.id;
}
const Dmn = DaemonService.method;
const Auth = AuthService.method;
const User = UserService.method;
const Cred = CredentialService.method;
const Sso = SSOService.method;
const Bill = BillingService.method;
const Util = UtilService.method;
const Rec = RecordingService.method;

const steps: ReadonlyArray<Row> = [
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
  ownerStep(W.updateWorkspace, "workspace.update", (_f, o) => ({
    request: { workspaceId: o.workspaceId, name: "Renamed" },
    resource: `workspace:${o.workspaceId}`,
  })),
  ownerStep(W.updateWorkspaceSettings, "workspace.settings.update", (_f, o) => ({
    request: { workspaceId: o.workspaceId, enrollAutoApprove: true },
    resource: `workspace:${o.workspaceId}`,
  })),
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
  ownerStep(W.removeWorkspaceMember, "member.remove", async (f, o) => {
    const m = await memberWithRole(f, o.workspaceId, "viewer");
    return {
      request: { workspaceId: o.workspaceId, userId: m.caller.userId },
      resource: `user:${m.caller.userId}`,
    };
  }),
  ownerStep(W.updateWorkspaceMember, "member.update", async (f, o) => {
    const m = await memberWithRole(f, o.workspaceId, "viewer");
    return {
      request: { workspaceId: o.workspaceId, userId: m.caller.userId, roleName: "editor" },
      resource: `user:${m.caller.userId}`,
    };
  }),
  ownerStep(W.updateWorkspaceOwner, "workspace.transfer", async (f, o) => {
    const m = await memberWithRole(f, o.workspaceId, "admin");
    return {
      request: { workspaceId: o.workspaceId, newOwner: m.caller.userId },
      resource: `user:${m.caller.userId}`,
    };
  }),
  [
    W.subscribeWorkspaceEvents,
    { unaudited: "a server stream that delivers the workspace's events; it changes nothing" },
  ],

  // WorkspaceDomainService
  ownerStep(Dom.createWorkspaceDomain, "domain.create", (_f, o) => {
    const domain = uniqueDomain();
    return { request: { workspaceId: o.workspaceId, domain }, resource: `domain:${domain}` };
  }),
  ...(
    [
      [Dom.deleteWorkspaceDomain, "domain.delete"],
      [Dom.verifyWorkspaceDomain, "domain.verify"],
      [Dom.regenerateWorkspaceDomainToken, "domain.regenerate_token"],
    ] as const
  ).map(([method, action]) =>
    ownerStep(either(method), action, async (f, o) => {
      const request = { workspaceId: o.workspaceId, domain: uniqueDomain() };
      const { domain } = await f.call(o.caller, Dom.createWorkspaceDomain, request);
      // The TXT record VerifyWorkspaceDomain looks for, on the walk's DNS server.
      f.network.zone.set(`_wap-challenge.${request.domain}`, [[domain!.verificationToken]]);
      return { request, resource: `domain:${request.domain}` };
    }),
  ),

  // InvitationService
  ownerStep(Inv.refreshInviteToken, "invitation.refresh", (_f, o) => theWorkspace(o)),
  ownerStep(Inv.revokeInviteToken, "invitation.revoke", async (f, o) => {
    await f.call(o.caller, Inv.refreshInviteToken, { workspaceId: o.workspaceId });
    return theWorkspace(o);
  }),
  unauditedStep(Inv.getInvitation, `${readsOnly} (the public page an invitee lands on)`, async (f) => {
    const o = await f.owner();
    const { link } = await f.call(o.caller, Inv.refreshInviteToken, { workspaceId: o.workspaceId });
    return { caller: anonymous, request: { token: link.split("/").pop()! } };
  }),
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
  ownerStep(Team.createTeam, "team.create", (_f, o) => ({
    request: { workspaceId: o.workspaceId, name: "walkers" },
    resource: ({ team }) => `team:${team!.id}`,
  })),
  ownerStep(Team.updateTeam, "team.update", async (f, o) => {
    const team = await aTeam(f, o);
    return {
      request: { workspaceId: o.workspaceId, id: team.id, name: "runners" },
      resource: `team:${team.id}`,
    };
  }),
  ownerStep(Team.deleteTeam, "team.delete", async (f, o) => {
    const team = await aTeam(f, o);
    return { request: { workspaceId: o.workspaceId, id: team.id }, resource: `team:${team.id}` };
  }),
  ownerStep(Team.addTeamMember, "team.member.add", async (f, o) => {
    const team = await aTeam(f, o);
    const m = await memberWithRole(f, o.workspaceId, "viewer");
    return {
      request: { workspaceId: o.workspaceId, teamId: team.id, userId: m.caller.userId },
      resource: `team:${team.id}`,
    };
  }),
  ownerStep(Team.removeTeamMember, "team.member.remove", async (f, o) => {
    const team = await aTeam(f, o);
    const m = await memberWithRole(f, o.workspaceId, "viewer");
    const request = { workspaceId: o.workspaceId, teamId: team.id, userId: m.caller.userId };
    await f.call(o.caller, Team.addTeamMember, request);
    return { request, resource: `team:${team.id}` };
  }),

  // ServiceAccountService
  ownerStep(SA.createServiceAccount, "service_account.create", (_f, o) => ({
    request: { workspaceId: o.workspaceId, name: "ci", roleName: "editor" },
    resource: ({ serviceAccount }) => `service_account:${serviceAccount!.id}`,
  })),
  ...changeByIdSteps(
    "service_account",
    [
      [SA.updateServiceAccount, "service_account.update", { description: "deploys" }],
      [SA.deleteServiceAccount, "service_account.delete", {}],
    ],
    async (f, o) => (await serviceAccountCaller(f, o, "editor")).serviceAccountId,
  ),

  // CertificateService
  ownerStep(Cert.createCertificateAuthority, "certificate_authority.create", (_f, o) => ({
    request: { workspaceId: o.workspaceId, name: "walk-ca", keyType: CertificateKeyType.ED25519 },
    resource: ({ certificateAuthority: ca }) => `certificate_authority:${ca!.id}`,
  })),
  ...changeByIdSteps(
    "certificate_authority",
    [
      [Cert.updateCertificateAuthority, "certificate_authority.update", { description: "for people" }],
      [Cert.deleteCertificateAuthority, "certificate_authority.delete", {}],
      [Cert.rolloverCertificateAuthority, "certificate_authority.rollover", {}],
      [Cert.rotateCertificateAuthority, "certificate_authority.rotate", { phase: RotationPhase.PUBLISHED }],
    ],
    async (f, o) => (await sshAuthority(f, o)).id,
  ),
  ownerStep(Cert.signSSHCertificate, "certificate.sign_ssh_user", async (f, o) => {
    const ca = await sshAuthority(f, o);
    const { line } = await subjectKey({ type: "ed25519" });
    return {
      request: {
        workspaceId: o.workspaceId,
        caId: ca.id,
        type: SignSSHCertificateRequest_CertificateType.USER,
        publicKey: line,
      },
      resource: () => latestIssuedCertificate(f, o),
    };
  }),
  ownerStep(Cert.beginSSHStepUp, "ssh_step_up.begin", async (f, o) => {
    const { targets } = await aStepUpLogin(f, o);
    return {
      request: { workspaceId: o.workspaceId, targets },
      resource: (response) => `ssh_step_up:${response.stepUp!.id} logins=1`,
    };
  }),
  ownerStep(Cert.completeSSHStepUp, "ssh_step_up.complete", async (f, o) => {
    const { targets, key, passkey } = await aStepUpLogin(f, o);
    const { stepUp } = await f.call(o.caller, Cert.beginSSHStepUp, { workspaceId: o.workspaceId, targets });
    const id = stepUp!.id;
    const { optionsJson } = await f.call(o.caller, Cert.getSSHStepUp, { workspaceId: o.workspaceId, id });
    return {
      request: { workspaceId: o.workspaceId, id, credentialJson: key.get(optionsJson!) },
      resource: `ssh_step_up:${id} passkey=${passkey.id}`,
    };
  }),
  ownerStep(Cert.revokeCertificate, "certificate.revoke", async (f, o) => {
    const ca = await sshAuthority(f, o);
    const { line } = await subjectKey({ type: "ed25519" });
    await f.call(o.caller, Cert.signSSHCertificate, {
      workspaceId: o.workspaceId,
      caId: ca.id,
      type: SignSSHCertificateRequest_CertificateType.USER,
      publicKey: line,
    });
    const { items } = await f.storage.issuedCertificates.list(o.workspaceId, { limit: 1, offset: 0 });
    return {
      request: { workspaceId: o.workspaceId, caId: ca.id, serial: items[0]!.serial },
      resource: `certificate_authority:${ca.id}`,
    };
  }),
  ownerStep(Cert.signX509Certificate, "certificate.sign_x509", async (f, o) => {
    const ca = await createAuthority(f, o, { type: "ed25519" }, { authorityType: AuthorityType.X509 });
    return {
      request: {
        workspaceId: o.workspaceId,
        caId: ca.id,
        csr: await clientCsr(o),
        usage: SignX509CertificateRequest_X509Usage.CLIENT_AUTH,
      },
      resource: () => latestIssuedCertificate(f, o),
    };
  }),

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
  ...changeByIdSteps(
    "target",
    [
      [Tgt.updateTarget, "target.update", { description: "the web server" }],
      [Tgt.deleteTarget, "target.delete", {}],
    ],
    async (f, o) => (await aTarget(f, o)).id,
  ),
  unauditedStep(Tgt.getSubjectAccess, readsOnly, async (f) => {
    const o = await f.owner();
    return { caller: o.caller, request: { workspaceId: o.workspaceId, subjectId: o.caller.userId } };
  }),

  // PrincipalService
  ownerStep(Pr.setPrincipals, "principal.set", async (f, o) => {
    const target = await aTarget(f, o);
    return {
      request: { workspaceId: o.workspaceId, targetId: target.id, usernames: ["ubuntu"] },
      resource: `target:${target.id}`,
    };
  }),
  ownerStep(Pr.addSubjectsToPrincipal, "principal.grant", async (f, o) => {
    const target = await aTarget(f, o);
    const principal = await grantLogin(f, o, target.id, "ubuntu", PrincipalType.USER, []);
    return { request: grantToOwner(o, principal), resource: `principal:${principal}` };
  }),
  ownerStep(Pr.removeSubjectsFromPrincipal, "principal.revoke", async (f, o) => {
    const target = await aTarget(f, o);
    const principal = await grantLogin(f, o, target.id, "ubuntu", PrincipalType.USER, [o.caller.userId]);
    return { request: grantToOwner(o, principal), resource: `principal:${principal}` };
  }),
  ownerStep(Pr.revokeAllAccess, "access.revoke_all", async (f, o) => {
    const target = await aTarget(f, o);
    await grantLogin(f, o, target.id, "ubuntu", PrincipalType.USER, [o.caller.userId]);
    return {
      request: { workspaceId: o.workspaceId, subjectId: o.caller.userId, type: PrincipalType.USER },
      resource: `user:${o.caller.userId}`,
    };
  }),

  // AccessRequestService
  ownerStep(Req.createAccessRequest, "access_request.create", async (f, o) => ({
    request: await anOnRequestGrant(f, o, o.caller.userId),
    resource: ({ request }) => `access_request:${request!.id}`,
  })),
  // Two approvals are needed: this one is recorded alone (the last also records the approval of the request).
  ownerStep(Req.approveAccessRequest, "access_request.approval", async (f, o) => {
    const id = await aPendingRequest(f, o);
    return { request: { workspaceId: o.workspaceId, id }, resource: `access_request:${id}` };
  }),
  ownerStep(Req.denyAccessRequest, "access_request.deny", async (f, o) => {
    const id = await aPendingRequest(f, o);
    return { request: { workspaceId: o.workspaceId, id, reason: "no" }, resource: `access_request:${id}` };
  }),
  ownerStep(Req.withdrawAccessRequest, "access_request.withdraw", async (f, o) => {
    const id = await aPendingRequest(f, o);
    return { request: { workspaceId: o.workspaceId, id }, resource: `access_request:${id}` };
  }),

  // WebhookService
  ownerStep(Hook.createWebhookEndpoint, "webhook.create", (_f, o) => ({
    request: { workspaceId: o.workspaceId, url: "https://192.0.2.1/hooks" },
    resource: ({ endpoint }) => `webhook:${endpoint!.id}`,
  })),
  ...changeByIdSteps(
    "webhook",
    [
      [Hook.updateWebhookEndpoint, "webhook.update", { description: "SIEM" }],
      [Hook.deleteWebhookEndpoint, "webhook.delete", {}],
      [Hook.rotateWebhookSecret, "webhook.rotate_secret", {}],
      [Hook.sendTestWebhook, "webhook.test", {}],
      [Hook.replayWebhookEvents, "webhook.replay", { fromSequence: 1n }],
    ],
    aWebhook,
  ),

  // DaemonService
  ownerStep(Dmn.updateDaemon, "daemon.update", async (f, o) => {
    const d = await aDaemon(f, o);
    return {
      request: { workspaceId: o.workspaceId, id: d.id, status: DaemonStatus.ACCEPTED },
      resource: `daemon:${d.id}`,
    };
  }),
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
  ownerStep(Dmn.refreshEnrollToken, "daemon.enroll_token.refresh", (_f, o) => theWorkspace(o)),
  ownerStep(Dmn.revokeEnrollToken, "daemon.enroll_token.revoke", async (f, o) => {
    await f.call(o.caller, Dmn.refreshEnrollToken, { workspaceId: o.workspaceId });
    return theWorkspace(o);
  }),
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
  ownerStep(Dmn.createSession, "session.create", async (f, o) => {
    const d = await aSessionReadyDaemon(f, o);
    return {
      request: { workspaceId: o.workspaceId, daemonId: d.id, username: "ubuntu" },
      resource: ({ session }) => `session:${session!.sessionId}`,
    };
  }),
  ownerStep(Dmn.closeSession, "session.close", async (f, o) => {
    const d = await aSessionReadyDaemon(f, o);
    const { session } = await f.call(o.caller, Dmn.createSession, {
      workspaceId: o.workspaceId,
      daemonId: d.id,
      username: "ubuntu",
    });
    return {
      request: { workspaceId: o.workspaceId, daemonId: d.id, sessionId: session!.sessionId },
      resource: `session:${session!.sessionId}`,
    };
  }),
  [
    Dmn.beginSSHSession,
    {
      prepare: async (f) => {
        const o = await f.owner();
        const { daemon, begin } = await anSshLogin(f, o);
        const self = await daemonCaller(f, daemon, Dmn.beginSSHSession);
        return prepared(
          (facts) => f.invoke(self, Dmn.beginSSHSession, begin, facts),
          ({ sessionId }) => [
            entry(
              { type: "daemon", id: daemon.id },
              "ssh_session.start",
              `ssh_session:${sessionId}`,
              o.workspaceId,
            ),
          ],
        );
      },
    },
  ],
  [
    Dmn.endSSHSession,
    {
      prepare: async (f) => {
        const o = await f.owner();
        const { daemon, begin } = await anSshLogin(f, o);
        const { sessionId } = await callAsDaemon(f, daemon, Dmn.beginSSHSession, begin);
        const self = await daemonCaller(f, daemon, Dmn.endSSHSession);
        const request = { sessionId, exitStatus: 0, bytesIn: 1n, bytesOut: 2n, reason: "exit 0" };
        return prepared(
          (facts) => f.invoke(self, Dmn.endSSHSession, request, facts),
          () => [
            entry(
              { type: "daemon", id: daemon.id },
              "ssh_session.end",
              `ssh_session:${sessionId}`,
              o.workspaceId,
            ),
          ],
        );
      },
    },
  ],
  // The bytes are stored as they come (appends are idempotent by offset); only completing the
  // recording is audited, in the transaction that completes it.
  withCommittedFirst(
    [
      Dmn.appendSSHRecording,
      {
        prepare: async (f) => {
          const o = await f.owner();
          const { daemon, begin } = await anSshLogin(f, o);
          await f.call(o.caller, Dmn.updateDaemon, {
            workspaceId: o.workspaceId,
            id: daemon.id,
            config: { recordSessions: true },
          });
          const { sessionId } = await callAsDaemon(f, daemon, Dmn.beginSSHSession, begin);
          const data = new TextEncoder().encode(
            '{"version":2,"width":80,"height":24}\n[0.5,"o","up 3 days"]\n',
          );
          const sha256 = createHash("sha256").update(data).digest("hex");
          const self = await daemonCaller(f, daemon, Dmn.appendSSHRecording);
          const request = { sessionId, offset: 0n, data, final: true };
          const resource = `recording:${sessionId} sha256=${sha256} bytes=${data.byteLength} truncated=false target=${daemon.targetId}`;
          // The last append completes the recording: the entry is the recording's, by its subject.
          return prepared(
            (facts) => f.invoke(self, Dmn.appendSSHRecording, request, facts),
            () => [entry(o.caller.userId, "recording.complete", resource, o.workspaceId)],
          );
        },
      },
    ],
    {
      tables: ["recordings", "recording_chunks"],
      why: "the bytes are stored as they come, idempotent by offset; completing the recording is audited",
    },
  ),
  [
    DaemonControlService.method.connect,
    {
      unaudited:
        "the daemon's control stream, run by the server instance holding it: it marks the daemon online and " +
        "carries notifications and session pushes; the sessions it carries are audited by CreateSession " +
        "and CloseSession",
    },
  ],
  [
    DaemonSessionService.method.session,
    {
      unaudited:
        "the terminal relay of one session, run by the server instance holding it; opening the session " +
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
  userStep(Auth.login, "user.login", (f, u) => ({
    caller: anonymous,
    request: { email: u.email, password },
    resource: sessionOfResponse(f),
  })),
  userStep(
    Auth.loginWithBackupCode,
    "user.login.backup_code",
    async (f, u) => {
      const { codes } = await f.call(u.caller, Cred.createBackupCodes, {});
      return {
        caller: anonymous,
        request: { email: u.email, code: codes[0]! },
        resource: sessionOfResponse(f),
      };
    },
    {
      committedFirst: {
        tables: ["login_throttles"],
        why: "a sign-in attempt is counted before the code is checked, whatever comes of it (throttling)",
      },
    },
  ),
  userStep(Auth.logout, "user.logout", (_f, u) => ({
    request: {},
    resource: `session:${u.caller.sessionId}`,
  })),
  unauditedStep(
    Auth.refreshToken,
    "rotates the refresh token of a session whose start is audited (user.login); an entry per " +
      "access-token lifetime of every client would bury the log",
    async (f) => {
      const u = await f.signUp();
      return { caller: anonymous, request: { refreshToken: u.tokens.refreshToken } };
    },
  ),
  unauditedStep(
    Auth.forgotPassword,
    "mails a reset link and answers the same whether or not the account exists; the reset itself " +
      "is audited (user.password.reset)",
    async (f) => ({ caller: anonymous, request: { email: (await f.signUp()).email } }),
  ),
  userStep(Auth.resetPassword, "user.password.reset", async (f, u) => {
    await f.call(anonymous, Auth.forgotPassword, { email: u.email });
    const token = await mailedToken(f, u.email, "/reset-password");
    return {
      caller: anonymous,
      request: { token, newPassword: "a brand new passphrase" },
      resource: `user:${u.caller.userId}`,
    };
  }),
  unauditedStep(
    Auth.resendVerification,
    "mails the verification link again and answers the same whether or not the account exists; " +
      "the verification itself is audited (user.email.verify)",
    async (f) => ({ caller: anonymous, request: { email: (await f.signUp()).email } }),
  ),
  userStep(Auth.verifyEmail, "user.email.verify", async (f, u) => ({
    caller: anonymous,
    request: { token: await mailedToken(f, u.email, "/verify-email") },
    resource: `user:${u.caller.userId}`,
  })),
  [
    Auth.streamCLILogin,
    {
      unaudited:
        "a server stream: it registers a pending login that expires " +
        "within minutes; its approval is audited by VerifyCLILogin (user.device.login)",
    },
  ],
  userStep(Auth.verifyCLILogin, "user.device.login", async (f) => {
    const deviceId = randomUUID();
    const pending = await startCliLogin(f.platform.services, createCallContext(anonymous), {
      authMethod: "soft",
      authPubkey: aDaemonKey().pem,
      deviceId,
    });
    const loginCode = new URL(pending.verificationUrl).searchParams.get("code")!;
    return { request: { loginCode, userCode: pending.userCode }, resource: `device:${deviceId}` };
  }),
  unauditedStep(
    Auth.getCLILogin,
    "reads what a pending CLI login shows its approver; changes nothing",
    async (f) => {
      const u = await f.signUp();
      const pending = await startCliLogin(f.platform.services, createCallContext(anonymous), {
        authMethod: "soft",
        authPubkey: aDaemonKey().pem,
        deviceId: randomUUID(),
      });
      return {
        caller: u.caller,
        request: { loginCode: new URL(pending.verificationUrl).searchParams.get("code")! },
      };
    },
  ),
  unauditedStep(
    Auth.beginPasskeyLogin,
    "hands out a short-lived challenge; the sign-in it leads to is audited (user.login.passkey)",
    async () => ({ caller: anonymous, request: {} }),
  ),
  userStep(
    Auth.finishPasskeyLogin,
    "user.login.passkey",
    async (f, u) => {
      const { key } = await withPasskey(f, u.caller);
      const { optionsJson } = await f.call(anonymous, Auth.beginPasskeyLogin, {});
      return {
        caller: anonymous,
        request: { credentialJson: key.get(optionsJson) },
        resource: sessionOfResponse(f),
      };
    },
    { committedFirst: challengeSpentFirst },
  ),

  // UserService
  ...[User.whoami, User.listUserDevices, User.listLinkedAccounts].map((method) =>
    unauditedStep(either(method), readsOnly, readBySignedUpUser),
  ),
  userStep(User.updateProfile, "user.profile.update", (_f, u) => ({
    request: { name: "Ada King" },
    resource: `user:${u.caller.userId}`,
  })),
  userStep(User.deleteAccount, "user.delete", (_f, u) => ({
    request: {},
    resource: `user:${u.caller.userId}`,
  })),
  userStep(User.deleteUserDevice, "user.device.delete", async (f, u) => {
    // A second sign-in: the browser session signed out from the first.
    const other = await f.call(anonymous, Auth.login, { email: u.email, password });
    const id = await sessionOf(f, other.accessToken);
    return { request: { id }, resource: `session:${id}` };
  }),
  userStep(User.unlinkAccount, "user.linked_account.delete", async (f, u) => {
    await f.storage.linkedAccounts.insert({
      userId: u.caller.userId,
      provider: "github",
      providerId: "4242",
      providerEmail: u.email,
      providerUsername: "walker",
      protocol: "oauth",
      createdAt: f.clock.now(),
    });
    return { request: { provider: "github" }, resource: "linked_account:github" };
  }),
  userStep(User.setEmailRecovery, "user.email_recovery.enable", (_f, u) => ({
    request: { enable: true },
    resource: `user:${u.caller.userId}`,
  })),

  // CredentialService
  userStep(Cred.updatePassword, "user.password.update", (_f, u) => ({
    request: { currentPassword: password, newPassword: "another fine passphrase" },
    resource: `user:${u.caller.userId}`,
  })),
  userStep(Cred.deletePassword, "user.password.delete", async (f, u) => {
    await withPasskey(f, u.caller);
    return { request: { currentPassword: password }, resource: `user:${u.caller.userId}` };
  }),
  ...[Cred.listPasskeys, Cred.listBackupCodes].map((method) =>
    unauditedStep(either(method), readsOnly, readBySignedUpUser),
  ),
  userStep(Cred.updatePasskey, "user.passkey.update", async (f, u) => {
    const { passkey } = await withPasskey(f, u.caller);
    return { request: { id: passkey.id, name: "Desk key" }, resource: `passkey:${passkey.id}` };
  }),
  userStep(Cred.deletePasskey, "user.passkey.delete", async (f, u) => {
    const { passkey } = await withPasskey(f, u.caller);
    return { request: { id: passkey.id }, resource: `passkey:${passkey.id}` };
  }),
  userStep(Cred.createBackupCodes, "user.backup_codes.create", (_f, u) => ({
    request: {},
    resource: `user:${u.caller.userId}`,
  })),
  userStep(Cred.deleteBackupCodes, "user.backup_codes.delete", async (f, u) => {
    await f.call(u.caller, Cred.createBackupCodes, {});
    return { request: {}, resource: `user:${u.caller.userId}` };
  }),
  unauditedStep(
    Cred.beginPasskeyRegistration,
    "hands out a short-lived challenge; the passkey it leads to is audited (user.passkey.create)",
    readBySignedUpUser,
  ),
  userStep(
    Cred.finishPasskeyRegistration,
    "user.passkey.create",
    async (f, u) => {
      const key = createSoftwareAuthenticator({ origin: publicBaseUrl });
      const { optionsJson } = await f.call(u.caller, Cred.beginPasskeyRegistration, {});
      return {
        request: { credentialJson: key.create(optionsJson), name: "Laptop" },
        resource: ({ passkey }) => `passkey:${passkey!.id}`,
      };
    },
    { committedFirst: challengeSpentFirst },
  ),

  // SSOService
  ownerStep(Sso.updateOIDCProvider, "sso.oidc.create", (f, o) => ({
    request: {
      workspaceId: o.workspaceId,
      name: "Corporate IdP",
      issuerUrl: "https://idp.example.com",
      clientId: "wap",
      clientSecret: "a client secret",
      scopes: ["openid", "email"],
    },
    resource: async () => `oidc_provider:${(await f.storage.oidcProviders.find(o.workspaceId))!.id}`,
  })),
  ownerStep(Sso.updateSAMLProvider, "sso.saml.create", (f, o) => ({
    request: {
      workspaceId: o.workspaceId,
      name: "Corporate IdP",
      metadataUrl: "https://idp.example.com/saml/metadata",
    },
    resource: async () => `saml_provider:${(await f.storage.samlProviders.find(o.workspaceId))!.id}`,
  })),
  unauditedStep(
    Sso.checkSSO,
    `${readsOnly} (public: a sign-in page asks before anyone signs in)`,
    async () => ({ caller: anonymous, request: { email: "someone@example.com" } }),
  ),

  // BillingService (against the walk's fake Stripe)
  ownerStep(Bill.createCheckout, "billing.checkout.create", (f, o) => ({
    request: { workspaceId: o.workspaceId },
    resource: async () =>
      `billing_customer:${(await f.storage.billingAccounts.find(o.workspaceId))!.customerId}`,
  })),
  ownerStep(Bill.createPortal, "billing.portal.create", async (f, o) => ({
    request: { workspaceId: o.workspaceId },
    resource: `billing_customer:${await aCheckout(f, o)}`,
  })),
  ownerStep(Bill.cancelSubscription, "billing.subscription.cancel_at_period_end", async (f, o) => {
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
    return { request: { workspaceId: o.workspaceId }, resource: `billing_subscription:${subscriptionId}` };
  }),

  // UtilService
  ownerStep(Util.exportAuditLogs, "audit.export", (_f, o) => ({
    request: { workspaceId: o.workspaceId },
    resource: ({ data }) => `audit_export:csv:${csvRows(data)}`,
  })),

  withCommittedFirst(
    ownerStep(Util.exportAuditChain, "audit.export_chain", (_f, o) => ({
      request: { workspaceId: o.workspaceId },
      resource: ({ data }) => {
        // The stretch the file holds: the positions of its first and last entries.
        const positions = [...new TextDecoder().decode(data).matchAll(/^entry,(\d+),/gm)].map((m) => m[1]);
        return `audit_chain_export:csv:${positions.length === 0 ? "empty" : `${positions[0]}-${positions.at(-1)}`}`;
      },
    })),
    {
      tables: ["audit_signing_keys", "audit_checkpoints"],
      why: "the file's checkpoint signs the chain as it stood when read, before the export's own entry",
    },
  ),

  // RecordingService
  ownerStep(Rec.deleteRecording, "recording.delete", async (f, o) => {
    const id = await aClosedSessionRecording(f, o, await aDaemon(f, o));
    return { request: { workspaceId: o.workspaceId, recordingId: id }, resource: `recording:${id}` };
  }),
];

/** The walk's table by procedure (`/platform.v1.Service/Method`). */
export const walkSteps: ReadonlyMap<string, WalkStep> = new Map(
  steps.map(([method, step]) => [procedureOf(method), step]),
);
