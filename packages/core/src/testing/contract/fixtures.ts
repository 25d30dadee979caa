/**
 * What the contract's parts share: the context the suite hands each of them (its storage, its
 * test registrar, a seeded workspace) and the record fixtures. Every row a fixture makes has fresh
 * ids and names, so tests may share a database.
 *
 * @module
 */
import { randomUUID } from "node:crypto";
import * as fc from "fast-check";
import { expect } from "vitest";
import type { AuditEventRecord } from "../../storage/audit.js";
import type { BackupCodeRecord } from "../../storage/backup-codes.js";
import type { BillingAccountRecord } from "../../storage/billing.js";
import type {
  CertificateAuthorityRecord,
  RetiredAuthorityKeyRecord,
} from "../../storage/certificate-authorities.js";
import type { IssuedCertificateRecord } from "../../storage/certificates.js";
import type { DaemonSessionRecord } from "../../storage/daemon-sessions.js";
import type { DaemonRecord } from "../../storage/daemons.js";
import type { CliLoginRecord, UserDeviceRecord } from "../../storage/devices.js";
import type { WorkspaceDomainRecord } from "../../storage/domains.js";
import type { EnrollTokenRecord } from "../../storage/enroll-tokens.js";
import type { WorkspaceInviteRecord } from "../../storage/invites.js";
import type { LinkedAccountRecord } from "../../storage/linked-accounts.js";
import type { MemberRecord } from "../../storage/members.js";
import type { OneTimeTokenRecord } from "../../storage/one-time-tokens.js";
import type { PasskeyRecord } from "../../storage/passkeys.js";
import type { PrincipalRecord } from "../../storage/principals.js";
import type { SecretRecord } from "../../storage/secrets.js";
import type { ServiceAccountRecord } from "../../storage/service-accounts.js";
import type { AuthSessionRecord, RefreshTokenRecord } from "../../storage/sessions.js";
import type { OidcProviderRecord, SamlProviderRecord, SsoLoginStateRecord } from "../../storage/sso.js";
import { type Repositories, type Storage, UniqueViolationError } from "../../storage/storage.js";
import type { TargetRecord } from "../../storage/targets.js";
import type { TeamRecord } from "../../storage/teams.js";
import type { UserRecord } from "../../storage/users.js";
import type { WorkspaceRecord } from "../../storage/workspaces.js";

/** What the suite hands each part of the contract. */
export interface ContractContext {
  /** The storage of the running test (a fresh one per test). */
  readonly storage: () => Storage;
  /** Registers a test; names are unique across the whole contract (skip lists name them). */
  readonly test: (name: string, fn: () => Promise<void>, timeout?: number) => void;
  /** A user, a workspace it created and its owner membership. */
  readonly seedWorkspace: (
    s?: Repositories,
  ) => Promise<{ user: UserRecord; workspace: WorkspaceRecord; member: MemberRecord }>;
}

/** Times `seconds` (and `ms`) after `base`: each part of the contract keeps the instants it was written with. */
export const timeline =
  (base: number) =>
  (seconds: number, ms = 0): Date =>
    new Date(base + seconds * 1000 + ms);

const base = Date.UTC(2024, 1, 29, 12, 34, 56, 789);
/** A time with milliseconds, `seconds` after the base. */
export const at = (seconds: number, ms = 0) => new Date(base + seconds * 1000 + ms);
export const uid = () => randomUUID();
/** A short unique suffix for names that must not collide across tests sharing a database. */
export const tag = () => randomUUID().slice(0, 8);
/** How many callers race in the "exactly one wins" tests. */
export const concurrency = 20;
/** A first page large enough for any list a test makes. */
export const page = { limit: 100, offset: 0 };

export function aUser(overrides: Partial<UserRecord> = {}): UserRecord {
  const t = tag();
  return {
    id: uid(),
    name: `Ada Lovelace ${t}`,
    username: `ada-${t}`,
    email: `ada-${t}@example.com`,
    emailVerified: true,
    picture: "https://example.com/ada.png",
    passwordHash: "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA",
    enableEmailRecovery: false,
    createdAt: at(0, 1),
    updatedAt: at(1, 2),
    ...overrides,
  };
}

export function aWorkspace(createdBy: string, overrides: Partial<WorkspaceRecord> = {}): WorkspaceRecord {
  return {
    id: uid(),
    name: `workspace ${tag()}`,
    description: "the team's servers",
    createdBy,
    enrollAutoApprove: false,
    enrollExpiresAt: null,
    inviteExpiresAt: null,
    createdAt: at(10, 3),
    updatedAt: at(10, 3),
    ...overrides,
  };
}

export function aMember(
  workspaceId: string,
  userId: string,
  overrides: Partial<MemberRecord> = {},
): MemberRecord {
  return { workspaceId, userId, role: "editor", createdAt: at(20, 4), updatedAt: at(21, 5), ...overrides };
}

export function anAuthority(
  workspaceId: string,
  overrides: Partial<CertificateAuthorityRecord> = {},
): CertificateAuthorityRecord {
  return {
    id: uid(),
    workspaceId,
    name: `ca ${tag()}`,
    description: "signs user certificates",
    authorityType: "ssh",
    keyType: "ed25519",
    keyBits: 256,
    certificate: "",
    publicKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl",
    serialNumber: "0a1b2c3d",
    subject: "CN=test",
    notBefore: at(30, 6),
    notAfter: at(30 + 86_400, 7),
    isActive: true,
    isDefault: false,
    allowedKeyTypes: ["ed25519", "ecdsa"],
    lifetimeSeconds: 3_153_600_000, // a century: more than a 32-bit integer holds
    userDefaultTtlSeconds: 3600,
    userMaxTtlSeconds: 86_400,
    hostDefaultTtlSeconds: 7200,
    hostMaxTtlSeconds: 2_592_000,
    userExtensions: { "permit-pty": "", "permit-port-forwarding": "" },
    userCriticalOptions: { "source-address": "10.0.0.0/8" },
    sealedPrivateKey: new Uint8Array([0, 1, 2, 127, 128, 254, 255, 0]),
    keyVersion: 1,
    keyStorage: "software",
    rotationPhase: "none",
    nextKey: null,
    createdAt: at(31, 8),
    updatedAt: at(31, 8),
    ...overrides,
  };
}

export function aServiceAccount(
  workspaceId: string,
  overrides: Partial<ServiceAccountRecord> = {},
): ServiceAccountRecord {
  return {
    id: uid(),
    workspaceId,
    name: `deploy-bot ${tag()}`,
    description: "ships the releases",
    role: "editor",
    tags: ["ci", "prod"],
    tokenHash: `hash-${uid()}`,
    expiresAt: at(40 + 86_400, 9),
    lastUsedAt: null,
    createdAt: at(40, 10),
    updatedAt: at(40, 10),
    ...overrides,
  };
}

export function aDaemon(workspaceId: string, overrides: Partial<DaemonRecord> = {}): DaemonRecord {
  return {
    id: uid(),
    workspaceId,
    targetId: null,
    name: `host-${tag()}`,
    status: "pending",
    recordSessions: false,
    requireRecording: false,
    metadata: { os: "linux", arch: "x86_64" },
    authPublicKey: "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA\n-----END PUBLIC KEY-----\n",
    authMethod: "token",
    onlineSince: null,
    createdAt: at(50, 11),
    updatedAt: at(50, 11),
    ...overrides,
  };
}

export function anAuditEvent(
  workspaceId: string | null,
  overrides: Partial<AuditEventRecord> = {},
): AuditEventRecord {
  return {
    id: uid(),
    workspaceId,
    actorId: uid(),
    actorType: "user",
    action: "certificate_authority.create",
    resource: `certificate_authority:${uid()}`,
    ipAddress: "192.0.2.1",
    userAgent: "curl/8.0",
    statusCode: "ok",
    requestId: uid(),
    timestamp: at(60, 12),
    ...overrides,
  };
}

export function aSession(userId: string, overrides: Partial<AuthSessionRecord> = {}): AuthSessionRecord {
  return {
    id: uid(),
    userId,
    createdAt: at(70, 13),
    expiresAt: at(70 + 2_592_000, 14),
    revokedAt: null,
    ipAddress: "2001:db8::1",
    userAgent: "Mozilla/5.0",
    ...overrides,
  };
}

export function aRefreshToken(
  sessionId: string,
  overrides: Partial<RefreshTokenRecord> = {},
): RefreshTokenRecord {
  return {
    id: uid(),
    sessionId,
    tokenHash: `sha256-${uid()}`,
    createdAt: at(80, 15),
    expiresAt: at(80 + 86_400, 16),
    rotatedAt: null,
    ...overrides,
  };
}

export function aSecret(overrides: Partial<SecretRecord> = {}): SecretRecord {
  return {
    name: `signing-key-${uid()}`,
    sealed: new Uint8Array([9, 8, 7, 0, 255]),
    createdAt: at(90, 17),
    ...overrides,
  };
}

/** Resolves to the rejection of `promise` (fails when it resolves). */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    (value) => {
      throw new Error(`expected a rejection, got ${JSON.stringify(value)}`);
    },
    (error: unknown) => error,
  );
}

export async function expectUnique(promise: Promise<unknown>, constraint: string): Promise<void> {
  const error = await rejection(promise);
  expect(error).toBeInstanceOf(UniqueViolationError);
  expect((error as UniqueViolationError).constraint).toBe(constraint);
}

/** Well-formed Unicode without U+0000 (which PostgreSQL text cannot hold; core rejects it). */
export const unicodeText = (maxLength: number) =>
  fc.string({ unit: "binary", maxLength }).filter((s) => !s.includes("\u0000"));

// --- the access-control parts (members, teams, principals, invites, domains, targets): at the instants they were written with ---

export const accessAt = timeline(Date.UTC(2025, 5, 1, 8, 0, 0, 250));

export function aTeam(workspaceId: string, overrides: Partial<TeamRecord> = {}): TeamRecord {
  return {
    id: uid(),
    workspaceId,
    name: `Platform Team ${tag()}`,
    description: "keeps the lights on",
    tags: ["ops", "on-call"],
    createdAt: accessAt(10, 1),
    updatedAt: accessAt(10, 1),
    ...overrides,
  };
}

export function anAccessTarget(
  workspaceId: string,
  caId: string,
  overrides: Partial<TargetRecord> = {},
): TargetRecord {
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
    createdAt: accessAt(20, 2),
    updatedAt: accessAt(20, 2),
    ...overrides,
  };
}

export function aPrincipal(
  workspaceId: string,
  targetId: string,
  overrides: Partial<PrincipalRecord> = {},
): PrincipalRecord {
  return { id: uid(), workspaceId, targetId, username: "deploy", createdAt: accessAt(30, 3), ...overrides };
}

export function aDomain(
  workspaceId: string,
  overrides: Partial<WorkspaceDomainRecord> = {},
): WorkspaceDomainRecord {
  return {
    workspaceId,
    domain: `d${tag()}.example.com`,
    verificationToken: `wap-domain-verification=${tag()}`,
    verifiedAt: null,
    createdAt: accessAt(40, 4),
    updatedAt: accessAt(40, 4),
    ...overrides,
  };
}

export function anInvite(
  workspaceId: string,
  overrides: Partial<WorkspaceInviteRecord> = {},
): WorkspaceInviteRecord {
  return {
    workspaceId,
    tokenHash: `hash-${uid()}`,
    role: "viewer",
    createdBy: uid(),
    createdAt: accessAt(50, 5),
    expiresAt: accessAt(50 + 86_400, 6),
    ...overrides,
  };
}

/** A workspace with its owner, a second member, an SSH authority and a target. */
export async function seedAccess(c: ContractContext) {
  const seeded = await c.seedWorkspace();
  const ws = seeded.workspace.id;
  const guest = aUser();
  await c.storage().users.insert(guest);
  await c.storage().members.insert(aMember(ws, guest.id, { role: "viewer", createdAt: accessAt(100, 7) }));
  const ca = anAuthority(ws);
  await c.storage().certificateAuthorities.insert(ca);
  const target = anAccessTarget(ws, ca.id);
  await c.storage().targets.insert(target);
  return { ...seeded, ws, guest, ca, target };
}

// --- the certificate parts (authorities, targets, the ledger): at the instants they were written with ---

export const certificateAt = timeline(Date.UTC(2025, 2, 14, 15, 9, 26, 535));

export function aWebTarget(
  workspaceId: string,
  caId: string,
  overrides: Partial<TargetRecord> = {},
): TargetRecord {
  return {
    id: uid(),
    workspaceId,
    caId,
    daemonId: null,
    name: `web-${tag()}`,
    description: "the front end",
    tags: ["prod", "eu-west"],
    endpoints: ["10.0.0.5:4022", "192.0.2.7:4022"],
    metadata: { os: "linux", hostname: "web-1" },
    createdAt: certificateAt(10, 1),
    updatedAt: certificateAt(10, 1),
    ...overrides,
  };
}

export function anIssued(
  workspaceId: string,
  caId: string,
  overrides: Partial<IssuedCertificateRecord> = {},
): IssuedCertificateRecord {
  const id = uid();
  return {
    id,
    workspaceId,
    caId,
    caKeyVersion: 1,
    kind: "ssh_user",
    // Above 2^63: serials are uint64 and must not pass through a signed 64-bit column.
    serial: (18_000_000_000_000_000_000n + BigInt(Math.floor(Math.random() * 1e15))).toString(),
    keyFingerprint: "SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU",
    principals: [uid()],
    validAfter: certificateAt(20, 2),
    validBefore: certificateAt(20 + 3600, 3),
    requesterType: "user",
    requesterId: uid(),
    targetId: null,
    keyId: `wap:${workspaceId}:user:${id}`,
    createdAt: certificateAt(20, 4),
    ...overrides,
  };
}

/** The audit event that goes with a ledger entry. */
export function anIssuanceEvent(entry: IssuedCertificateRecord): AuditEventRecord {
  return {
    id: uid(),
    workspaceId: entry.workspaceId,
    actorId: entry.requesterId,
    actorType: entry.requesterType,
    action: "certificate.sign_ssh_user",
    resource: `issued_certificate:${entry.id}`,
    ipAddress: "192.0.2.1",
    userAgent: "wap-cli/1.0",
    statusCode: "ok",
    requestId: uid(),
    timestamp: entry.createdAt,
  };
}

export function aRetiredKey(
  ca: CertificateAuthorityRecord,
  overrides: Partial<RetiredAuthorityKeyRecord> = {},
): RetiredAuthorityKeyRecord {
  return {
    workspaceId: ca.workspaceId,
    caId: ca.id,
    version: 1,
    keyType: "ecdsa",
    keyBits: 384,
    publicKey: "ecdsa-sha2-nistp384 AAAAE2VjZHNhLXNoYTItbmlzdHAzODQ=",
    certificate: "",
    serialNumber: "",
    notBefore: certificateAt(0, 5),
    notAfter: certificateAt(315_360_000, 6),
    createdAt: certificateAt(0, 5),
    retiredAt: certificateAt(500, 7),
    trustedUntil: certificateAt(500 + 86_400, 8),
    ...overrides,
  };
}

/** A workspace with one SSH authority. */
export async function seedAuthority(
  ctx: ContractContext,
  overrides: Partial<CertificateAuthorityRecord> = {},
) {
  const { workspace } = await ctx.seedWorkspace();
  const ca = anAuthority(workspace.id, overrides);
  await ctx.storage().certificateAuthorities.insert(ca);
  return { workspace, ca };
}

// --- the account parts (users, sessions, credentials, devices): at the instants they were written with ---

export const accountAt = timeline(Date.UTC(2025, 6, 1, 8, 0, 0, 321));

export function aOneTimeToken(
  userId: string | null,
  overrides: Partial<OneTimeTokenRecord> = {},
): OneTimeTokenRecord {
  return {
    id: uid(),
    purpose: "reset_password",
    tokenHash: `sha256-${uid()}`,
    userId,
    data: { email: "ada@example.com", note: "ünïcødé ✓" },
    createdAt: accountAt(0, 1),
    expiresAt: accountAt(3600, 2),
    consumedAt: null,
    ...overrides,
  };
}

export function aPasskey(userId: string, overrides: Partial<PasskeyRecord> = {}): PasskeyRecord {
  return {
    id: `cred_${uid().replaceAll("-", "")}`,
    userId,
    name: "YubiKey 5 🔑",
    publicKey: new Uint8Array([0xa5, 0x01, 0x02, 0x03, 0x26, 0x00, 0xff]),
    counter: 4_000_000_000, // beyond int32: counters are uint32
    transports: ["usb", "nfc"],
    deviceType: "singleDevice",
    backedUp: false,
    createdAt: accountAt(10, 3),
    lastUsedAt: null,
    ...overrides,
  };
}

export function aBackupCode(userId: string, overrides: Partial<BackupCodeRecord> = {}): BackupCodeRecord {
  return {
    id: uid(),
    userId,
    codeHash: `sha256-${uid()}`,
    createdAt: accountAt(20, 4),
    usedAt: null,
    ...overrides,
  };
}

export function aDevice(
  userId: string,
  sessionId: string,
  overrides: Partial<UserDeviceRecord> = {},
): UserDeviceRecord {
  return {
    id: uid(),
    userId,
    sessionId,
    name: "ada-laptop",
    authMethod: "tpm",
    publicKey: "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----\n",
    createdAt: accountAt(30, 5),
    expiresAt: accountAt(30 + 7_776_000, 6),
    lastUsedAt: null,
    ...overrides,
  };
}

export function aCliLogin(overrides: Partial<CliLoginRecord> = {}): CliLoginRecord {
  return {
    id: uid(),
    codeHash: `sha256-${uid()}`,
    deviceId: uid(),
    deviceName: "build-box",
    authMethod: "soft",
    publicKey: "-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----\n",
    ipAddress: "198.51.100.7",
    userAgent: "platform-cli/1.0",
    createdAt: accountAt(40, 7),
    expiresAt: accountAt(640, 8),
    approvedBy: null,
    approvedAt: null,
    userCodeHash: `sha256-${uid()}`,
    codeFailures: 0,
    deniedAt: null,
    clientOs: "linux/x64",
    clientVersion: "1.2.3",
    ...overrides,
  };
}

export function aLinkedAccount(
  userId: string,
  overrides: Partial<LinkedAccountRecord> = {},
): LinkedAccountRecord {
  return {
    userId,
    provider: `github-${uid().slice(0, 8)}`,
    providerId: uid(),
    providerEmail: "ada@users.noreply.example.com",
    providerUsername: "ada",
    protocol: "oauth",
    createdAt: accountAt(50, 9),
    ...overrides,
  };
}

export async function newUser(ctx: ContractContext, overrides: Partial<UserRecord> = {}) {
  const user = aUser(overrides);
  await ctx.storage().users.insert(user);
  return user;
}

export async function newSession(
  ctx: ContractContext,
  userId: string,
  overrides: Partial<AuthSessionRecord> = {},
) {
  const session = aSession(userId, overrides);
  await ctx.storage().authSessions.insert(session);
  return session;
}

// --- the daemon parts (daemons, enrolment tokens, sessions): at the instants they were written with ---

export const daemonAt = timeline(Date.UTC(2026, 7, 12, 7, 17, 0, 321));

export function anEnrollToken(
  workspaceId: string,
  overrides: Partial<EnrollTokenRecord> = {},
): EnrollTokenRecord {
  return {
    workspaceId,
    tokenHash: `hash-${uid()}`,
    createdBy: uid(),
    createdAt: daemonAt(1, 5),
    expiresAt: daemonAt(86_401, 5),
    ...overrides,
  };
}

export function aDaemonSession(
  workspaceId: string,
  daemonId: string,
  overrides: Partial<DaemonSessionRecord> = {},
): DaemonSessionRecord {
  return {
    id: uid(),
    workspaceId,
    daemonId,
    userId: uid(),
    username: "deploy$",
    state: "pending",
    createdAt: daemonAt(10, 7),
    openedAt: null,
    closedAt: null,
    closeReason: "",
    ...overrides,
  };
}

/** A workspace with one daemon in it. */
export async function seedDaemon(ctx: ContractContext, overrides: Partial<DaemonRecord> = {}) {
  const storage = ctx.storage();
  const { workspace } = await ctx.seedWorkspace();
  const daemon = aDaemon(workspace.id, overrides);
  await storage.daemons.insert(daemon);
  return { storage, workspace, daemon };
}

// --- the SSO and billing parts: at the instants they were written with ---

export const ssoAt = timeline(Date.UTC(2026, 3, 7, 9, 15, 30, 123));

export function anOidcProvider(
  workspaceId: string,
  overrides: Partial<OidcProviderRecord> = {},
): OidcProviderRecord {
  return {
    id: uid(),
    workspaceId,
    name: "Acme Okta ✓",
    issuerUrl: "https://acme.okta.example/oauth2/default",
    clientId: `client-${tag()}`,
    sealedClientSecret: new Uint8Array([1, 0, 255, 128, 7]),
    scopes: ["openid", "email", "profile"],
    emailClaim: "email",
    nameClaim: "name",
    usernameClaim: "preferred_username",
    pictureClaim: "",
    enforceSso: true,
    allowJitProvisioning: false,
    usePkce: true,
    isActive: true,
    createdAt: ssoAt(0, 1),
    updatedAt: ssoAt(1, 2),
    ...overrides,
  };
}

export function aSamlProvider(
  workspaceId: string,
  overrides: Partial<SamlProviderRecord> = {},
): SamlProviderRecord {
  return {
    id: uid(),
    workspaceId,
    name: "Acme ADFS",
    metadataUrl: "https://adfs.acme.example/FederationMetadata/2007-06/FederationMetadata.xml",
    emailAttribute: "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress",
    nameAttribute: "",
    usernameAttribute: "uid",
    pictureAttribute: "",
    enforceSso: false,
    allowJitProvisioning: true,
    isActive: true,
    idpMetadata: null,
    createdAt: ssoAt(2, 3),
    updatedAt: ssoAt(3, 4),
    ...overrides,
  };
}

export function aLoginState(
  workspaceId: string,
  overrides: Partial<SsoLoginStateRecord> = {},
): SsoLoginStateRecord {
  return {
    id: `sha256-${uid()}`,
    workspaceId,
    protocol: "oidc",
    data: { nonce: "n-0S6_WzA2Mj", codeVerifier: "ünïcødé", returnTo: "/workspaces?tab=1" },
    createdAt: ssoAt(10, 5),
    expiresAt: ssoAt(610, 6),
    ...overrides,
  };
}

export function aBillingAccount(
  workspaceId: string,
  overrides: Partial<BillingAccountRecord> = {},
): BillingAccountRecord {
  return {
    workspaceId,
    provider: "stripe",
    customerId: `cus_${tag()}`,
    subscriptionId: `sub_${tag()}`,
    productId: "prod_team",
    productName: "Team ✓",
    status: "active",
    cancelAtPeriodEnd: false,
    currentPeriodEnd: ssoAt(30 * 86_400, 7),
    metadata: { workspace_id: workspaceId, note: "ünïcødé" },
    stateAt: ssoAt(20, 8),
    createdAt: ssoAt(20, 9),
    updatedAt: ssoAt(21, 10),
    ...overrides,
  };
}
