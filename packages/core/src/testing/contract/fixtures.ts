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
import type { CertificateAuthorityRecord } from "../../storage/certificate-authorities.js";
import type { DaemonRecord } from "../../storage/daemons.js";
import type { MemberRecord } from "../../storage/members.js";
import type { SecretRecord } from "../../storage/secrets.js";
import type { ServiceAccountRecord } from "../../storage/service-accounts.js";
import type { AuthSessionRecord, RefreshTokenRecord } from "../../storage/sessions.js";
import { type Repositories, type Storage, UniqueViolationError } from "../../storage/storage.js";
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
