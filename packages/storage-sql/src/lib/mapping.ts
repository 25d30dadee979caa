/**
 * Row <-> record conversions: every representation choice (times, booleans, bytes, JSON) lives
 * here and nowhere else.
 *
 * @module
 */
import type {
  AuditEventRecord,
  AuthorityKeyRecord,
  AuthSessionRecord,
  CertificateAuthorityRecord,
  DaemonRecord,
  IssuedCertificateRecord,
  MemberRecord,
  RefreshTokenRecord,
  RetiredAuthorityKeyRecord,
  SecretRecord,
  ServiceAccountRecord,
  TargetRecord,
  UserRecord,
  WorkspaceRecord,
} from "@wap/core/storage";
import type { Insertable, Selectable } from "kysely";
import type {
  AuditEventsTable,
  AuthSessionsTable,
  CertificateAuthoritiesTable,
  CertificateAuthorityKeysTable,
  DaemonsTable,
  IssuedCertificatesTable,
  RefreshTokensTable,
  SecretsTable,
  ServiceAccountsTable,
  TargetsTable,
  UsersTable,
  WorkspaceMembersTable,
  WorkspacesTable,
} from "../schema.js";

// --- scalars ---------------------------------------------------------------------------------

/** pg returns int8 and count(*) as strings; SQLite returns numbers. */
export function toNumber(value: number | string | bigint): number {
  const n = typeof value === "number" ? value : Number(value);
  if (!Number.isSafeInteger(n)) throw new RangeError(`not a safe integer: ${String(value)}`);
  return n;
}

export function toDate(value: number | string | bigint): Date {
  return new Date(toNumber(value));
}

export function toDateOrNull(value: number | string | bigint | null): Date | null {
  return value === null ? null : toDate(value);
}

export function fromDate(date: Date): number {
  const ms = date.getTime();
  if (Number.isNaN(ms)) throw new RangeError("invalid Date");
  return ms;
}

export function fromDateOrNull(date: Date | null): number | null {
  return date === null ? null : fromDate(date);
}

export function toFlag(value: boolean): 0 | 1 {
  return value ? 1 : 0;
}

export function fromFlag(value: number | string | bigint): boolean {
  return Number(value) !== 0;
}

/** Drivers hand out Buffers (and pooled ones): copy into a plain Uint8Array the caller owns. */
export function toBytes(value: Uint8Array): Uint8Array {
  const copy = new Uint8Array(value.byteLength);
  copy.set(value);
  return copy;
}

/** better-sqlite3 and pg both bind Buffers; a view avoids copying. */
export function fromBytes(value: Uint8Array): Uint8Array {
  return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
}

export function toJson(value: unknown): string {
  return JSON.stringify(value);
}

export function toStringArray<T extends string = string>(text: string): T[] {
  return JSON.parse(text) as T[];
}

export function toStringMap(text: string): Record<string, string> {
  return JSON.parse(text) as Record<string, string>;
}

/** The case folding behind every case-insensitive filter: the same on every engine. */
export function fold(text: string): string {
  return text.toLowerCase();
}

/** A LIKE pattern matching `folded` anywhere; `!` escapes wildcards (no backslash quoting to get wrong). */
export function likeContains(folded: string): string {
  return `%${folded.replace(/[!%_]/g, (c) => `!${c}`)}%`;
}

// --- rows ------------------------------------------------------------------------------------

export function userToRow(u: UserRecord): Insertable<UsersTable> {
  return {
    id: u.id,
    name: u.name,
    username: u.username,
    email: u.email,
    email_verified: toFlag(u.emailVerified),
    picture: u.picture,
    password_hash: u.passwordHash,
    enable_email_recovery: toFlag(u.enableEmailRecovery),
    created_at: fromDate(u.createdAt),
    updated_at: fromDate(u.updatedAt),
  };
}

export function rowToUser(r: Selectable<UsersTable>): UserRecord {
  return {
    id: r.id,
    name: r.name,
    username: r.username,
    email: r.email,
    emailVerified: fromFlag(r.email_verified),
    picture: r.picture,
    passwordHash: r.password_hash,
    enableEmailRecovery: fromFlag(r.enable_email_recovery),
    createdAt: toDate(r.created_at),
    updatedAt: toDate(r.updated_at),
  };
}

export function sessionToRow(s: AuthSessionRecord): Insertable<AuthSessionsTable> {
  return {
    id: s.id,
    user_id: s.userId,
    created_at: fromDate(s.createdAt),
    expires_at: fromDate(s.expiresAt),
    revoked_at: fromDateOrNull(s.revokedAt),
    ip_address: s.ipAddress,
    user_agent: s.userAgent,
  };
}

export function rowToSession(r: Selectable<AuthSessionsTable>): AuthSessionRecord {
  return {
    id: r.id,
    userId: r.user_id,
    createdAt: toDate(r.created_at),
    expiresAt: toDate(r.expires_at),
    revokedAt: toDateOrNull(r.revoked_at),
    ipAddress: r.ip_address,
    userAgent: r.user_agent,
  };
}

export function refreshTokenToRow(t: RefreshTokenRecord): Insertable<RefreshTokensTable> {
  return {
    id: t.id,
    session_id: t.sessionId,
    token_hash: t.tokenHash,
    created_at: fromDate(t.createdAt),
    expires_at: fromDate(t.expiresAt),
    rotated_at: fromDateOrNull(t.rotatedAt),
  };
}

export function rowToRefreshToken(r: Selectable<RefreshTokensTable>): RefreshTokenRecord {
  return {
    id: r.id,
    sessionId: r.session_id,
    tokenHash: r.token_hash,
    createdAt: toDate(r.created_at),
    expiresAt: toDate(r.expires_at),
    rotatedAt: toDateOrNull(r.rotated_at),
  };
}

export function workspaceToRow(w: WorkspaceRecord): Insertable<WorkspacesTable> {
  return {
    id: w.id,
    name: w.name,
    description: w.description,
    created_by: w.createdBy,
    enroll_auto_approve: toFlag(w.enrollAutoApprove),
    enroll_expires_at: fromDateOrNull(w.enrollExpiresAt),
    invite_expires_at: fromDateOrNull(w.inviteExpiresAt),
    created_at: fromDate(w.createdAt),
    updated_at: fromDate(w.updatedAt),
  };
}

export function rowToWorkspace(r: Selectable<WorkspacesTable>): WorkspaceRecord {
  return {
    id: r.id,
    name: r.name,
    description: r.description,
    createdBy: r.created_by,
    enrollAutoApprove: fromFlag(r.enroll_auto_approve),
    enrollExpiresAt: toDateOrNull(r.enroll_expires_at),
    inviteExpiresAt: toDateOrNull(r.invite_expires_at),
    createdAt: toDate(r.created_at),
    updatedAt: toDate(r.updated_at),
  };
}

export function memberToRow(m: MemberRecord): Insertable<WorkspaceMembersTable> {
  return {
    workspace_id: m.workspaceId,
    user_id: m.userId,
    role: m.role,
    created_at: fromDate(m.createdAt),
    updated_at: fromDate(m.updatedAt),
  };
}

export function rowToMember(r: Selectable<WorkspaceMembersTable>): MemberRecord {
  return {
    workspaceId: r.workspace_id,
    userId: r.user_id,
    role: r.role as MemberRecord["role"],
    createdAt: toDate(r.created_at),
    updatedAt: toDate(r.updated_at),
  };
}

export function authorityToRow(c: CertificateAuthorityRecord): Insertable<CertificateAuthoritiesTable> {
  return {
    id: c.id,
    workspace_id: c.workspaceId,
    name: c.name,
    description: c.description,
    authority_type: c.authorityType,
    key_type: c.keyType,
    key_bits: c.keyBits,
    certificate: c.certificate,
    public_key: c.publicKey,
    serial_number: c.serialNumber,
    subject: c.subject,
    not_before: fromDate(c.notBefore),
    not_after: fromDate(c.notAfter),
    is_active: toFlag(c.isActive),
    is_default: toFlag(c.isDefault),
    allowed_key_types: toJson(c.allowedKeyTypes),
    lifetime_seconds: c.lifetimeSeconds,
    user_default_ttl_seconds: c.userDefaultTtlSeconds,
    user_max_ttl_seconds: c.userMaxTtlSeconds,
    host_default_ttl_seconds: c.hostDefaultTtlSeconds,
    host_max_ttl_seconds: c.hostMaxTtlSeconds,
    user_extensions: toJson(c.userExtensions),
    user_critical_options: toJson(c.userCriticalOptions),
    sealed_private_key: fromBytes(c.sealedPrivateKey),
    key_version: c.keyVersion,
    key_storage: c.keyStorage,
    rotation_phase: c.rotationPhase,
    next_key: nextKeyToColumn(c.nextKey),
    created_at: fromDate(c.createdAt),
    updated_at: fromDate(c.updatedAt),
  };
}

/** The incoming key of a staged rotation as the JSON `next_key` column holds it. */
export function nextKeyToColumn(key: AuthorityKeyRecord | null): string | null {
  if (key === null) return null;
  return JSON.stringify({
    ...key,
    notBefore: key.notBefore.getTime(),
    notAfter: key.notAfter.getTime(),
    sealedPrivateKey: Buffer.from(key.sealedPrivateKey).toString("base64"),
  });
}

function nextKeyFromColumn(value: string | null): AuthorityKeyRecord | null {
  if (value === null) return null;
  const raw = JSON.parse(value) as Omit<AuthorityKeyRecord, "notBefore" | "notAfter" | "sealedPrivateKey"> & {
    notBefore: number;
    notAfter: number;
    sealedPrivateKey: string;
  };
  return {
    ...raw,
    notBefore: new Date(raw.notBefore),
    notAfter: new Date(raw.notAfter),
    sealedPrivateKey: new Uint8Array(Buffer.from(raw.sealedPrivateKey, "base64")),
  };
}

export function rowToAuthority(r: Selectable<CertificateAuthoritiesTable>): CertificateAuthorityRecord {
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    name: r.name,
    description: r.description,
    authorityType: r.authority_type as CertificateAuthorityRecord["authorityType"],
    keyType: r.key_type as CertificateAuthorityRecord["keyType"],
    keyBits: toNumber(r.key_bits),
    certificate: r.certificate,
    publicKey: r.public_key,
    serialNumber: r.serial_number,
    subject: r.subject,
    notBefore: toDate(r.not_before),
    notAfter: toDate(r.not_after),
    isActive: fromFlag(r.is_active),
    isDefault: fromFlag(r.is_default),
    allowedKeyTypes: toStringArray<CertificateAuthorityRecord["keyType"]>(r.allowed_key_types),
    lifetimeSeconds: toNumber(r.lifetime_seconds),
    userDefaultTtlSeconds: toNumber(r.user_default_ttl_seconds),
    userMaxTtlSeconds: toNumber(r.user_max_ttl_seconds),
    hostDefaultTtlSeconds: toNumber(r.host_default_ttl_seconds),
    hostMaxTtlSeconds: toNumber(r.host_max_ttl_seconds),
    userExtensions: toStringMap(r.user_extensions),
    userCriticalOptions: toStringMap(r.user_critical_options),
    sealedPrivateKey: toBytes(r.sealed_private_key),
    keyVersion: toNumber(r.key_version),
    keyStorage: r.key_storage as CertificateAuthorityRecord["keyStorage"],
    rotationPhase: r.rotation_phase as CertificateAuthorityRecord["rotationPhase"],
    nextKey: nextKeyFromColumn(r.next_key),
    createdAt: toDate(r.created_at),
    updatedAt: toDate(r.updated_at),
  };
}

export function serviceAccountToRow(a: ServiceAccountRecord): Insertable<ServiceAccountsTable> {
  return {
    id: a.id,
    workspace_id: a.workspaceId,
    name: a.name,
    name_folded: fold(a.name),
    description: a.description,
    description_folded: fold(a.description),
    role: a.role,
    tags: toJson(a.tags),
    token_hash: a.tokenHash,
    expires_at: fromDateOrNull(a.expiresAt),
    last_used_at: fromDateOrNull(a.lastUsedAt),
    created_at: fromDate(a.createdAt),
    updated_at: fromDate(a.updatedAt),
  };
}

export function rowToServiceAccount(r: Selectable<ServiceAccountsTable>): ServiceAccountRecord {
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    name: r.name,
    description: r.description,
    role: r.role as ServiceAccountRecord["role"],
    tags: toStringArray(r.tags),
    tokenHash: r.token_hash,
    expiresAt: toDateOrNull(r.expires_at),
    lastUsedAt: toDateOrNull(r.last_used_at),
    createdAt: toDate(r.created_at),
    updatedAt: toDate(r.updated_at),
  };
}

export function daemonToRow(d: DaemonRecord): Insertable<DaemonsTable> {
  return {
    id: d.id,
    workspace_id: d.workspaceId,
    target_id: d.targetId,
    name: d.name,
    name_folded: fold(d.name),
    status: d.status,
    record_sessions: toFlag(d.recordSessions),
    metadata: toJson(d.metadata),
    auth_public_key: d.authPublicKey,
    auth_method: d.authMethod,
    online_since: fromDateOrNull(d.onlineSince),
    created_at: fromDate(d.createdAt),
    updated_at: fromDate(d.updatedAt),
  };
}

export function rowToDaemon(r: Selectable<DaemonsTable>): DaemonRecord {
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    targetId: r.target_id,
    name: r.name,
    status: r.status as DaemonRecord["status"],
    recordSessions: fromFlag(r.record_sessions),
    metadata: toStringMap(r.metadata),
    authPublicKey: r.auth_public_key,
    authMethod: r.auth_method,
    onlineSince: toDateOrNull(r.online_since),
    createdAt: toDate(r.created_at),
    updatedAt: toDate(r.updated_at),
  };
}

export function auditEventToRow(e: AuditEventRecord): Insertable<AuditEventsTable> {
  return {
    id: e.id,
    workspace_id: e.workspaceId,
    actor_id: e.actorId,
    actor_type: e.actorType,
    action: e.action,
    resource: e.resource,
    ip_address: e.ipAddress,
    user_agent: e.userAgent,
    status_code: e.statusCode,
    request_id: e.requestId,
    occurred_at: fromDate(e.timestamp),
  };
}

export function rowToAuditEvent(r: Selectable<AuditEventsTable>): AuditEventRecord {
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    actorId: r.actor_id,
    actorType: r.actor_type,
    action: r.action,
    resource: r.resource,
    ipAddress: r.ip_address,
    userAgent: r.user_agent,
    statusCode: r.status_code,
    requestId: r.request_id,
    timestamp: toDate(r.occurred_at),
  };
}

export function secretToRow(s: SecretRecord): Insertable<SecretsTable> {
  return { name: s.name, sealed: fromBytes(s.sealed), created_at: fromDate(s.createdAt) };
}

export function rowToSecret(r: Selectable<SecretsTable>): SecretRecord {
  return { name: r.name, sealed: toBytes(r.sealed), createdAt: toDate(r.created_at) };
}

export function targetToRow(t: TargetRecord): Insertable<TargetsTable> {
  return {
    id: t.id,
    workspace_id: t.workspaceId,
    ca_id: t.caId,
    daemon_id: t.daemonId,
    name: t.name,
    name_folded: fold(t.name),
    description: t.description,
    tags: toJson(t.tags),
    endpoints: toJson(t.endpoints),
    metadata: toJson(t.metadata),
    created_at: fromDate(t.createdAt),
    updated_at: fromDate(t.updatedAt),
  };
}

export function rowToTarget(r: Selectable<TargetsTable>): TargetRecord {
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    caId: r.ca_id,
    daemonId: r.daemon_id,
    name: r.name,
    description: r.description,
    tags: toStringArray(r.tags),
    endpoints: toStringArray(r.endpoints),
    metadata: toStringMap(r.metadata),
    createdAt: toDate(r.created_at),
    updatedAt: toDate(r.updated_at),
  };
}

export function issuedCertificateToRow(c: IssuedCertificateRecord): Insertable<IssuedCertificatesTable> {
  return {
    id: c.id,
    workspace_id: c.workspaceId,
    ca_id: c.caId,
    ca_key_version: c.caKeyVersion,
    kind: c.kind,
    serial: c.serial,
    key_fingerprint: c.keyFingerprint,
    principals: toJson(c.principals),
    valid_after: fromDate(c.validAfter),
    valid_before: fromDate(c.validBefore),
    requester_type: c.requesterType,
    requester_id: c.requesterId,
    target_id: c.targetId,
    key_id: c.keyId,
    created_at: fromDate(c.createdAt),
    revoked_at: fromDateOrNull(c.revokedAt ?? null),
    revocation_reason: c.revocationReason ?? null,
    revoked_by: c.revokedBy ?? null,
  };
}

export function rowToIssuedCertificate(r: Selectable<IssuedCertificatesTable>): IssuedCertificateRecord {
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    caId: r.ca_id,
    caKeyVersion: toNumber(r.ca_key_version),
    kind: r.kind as IssuedCertificateRecord["kind"],
    serial: r.serial,
    keyFingerprint: r.key_fingerprint,
    principals: toStringArray(r.principals),
    validAfter: toDate(r.valid_after),
    validBefore: toDate(r.valid_before),
    requesterType: r.requester_type,
    requesterId: r.requester_id,
    targetId: r.target_id,
    keyId: r.key_id,
    createdAt: toDate(r.created_at),
    // Revocation fields only on revoked entries, as every adapter's read path returns them.
    ...(r.revoked_at !== null &&
      r.revoked_at !== undefined && {
        revokedAt: toDateOrNull(r.revoked_at),
        revocationReason: r.revocation_reason as IssuedCertificateRecord["revocationReason"],
        revokedBy: r.revoked_by,
      }),
  };
}

export function retiredKeyToRow(k: RetiredAuthorityKeyRecord): Insertable<CertificateAuthorityKeysTable> {
  return {
    workspace_id: k.workspaceId,
    ca_id: k.caId,
    version: k.version,
    key_type: k.keyType,
    key_bits: k.keyBits,
    public_key: k.publicKey,
    certificate: k.certificate,
    serial_number: k.serialNumber,
    not_before: fromDate(k.notBefore),
    not_after: fromDate(k.notAfter),
    created_at: fromDate(k.createdAt),
    retired_at: fromDate(k.retiredAt),
    trusted_until: fromDate(k.trustedUntil),
  };
}

export function rowToRetiredKey(r: Selectable<CertificateAuthorityKeysTable>): RetiredAuthorityKeyRecord {
  return {
    workspaceId: r.workspace_id,
    caId: r.ca_id,
    version: toNumber(r.version),
    keyType: r.key_type as RetiredAuthorityKeyRecord["keyType"],
    keyBits: toNumber(r.key_bits),
    publicKey: r.public_key,
    certificate: r.certificate,
    serialNumber: r.serial_number,
    notBefore: toDate(r.not_before),
    notAfter: toDate(r.not_after),
    createdAt: toDate(r.created_at),
    retiredAt: toDate(r.retired_at),
    trustedUntil: toDate(r.trusted_until),
  };
}
