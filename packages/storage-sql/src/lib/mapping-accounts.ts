/**
 * Row <-> record conversions of the account tables, on the scalar rules of `mapping.ts`.
 *
 * @module
 */
import type {
  BackupCodeRecord,
  CliLoginRecord,
  LinkedAccountRecord,
  LoginThrottleRecord,
  OneTimeTokenPurpose,
  OneTimeTokenRecord,
  PasskeyRecord,
  UserDeviceRecord,
} from "@wap/core/storage";
import type { Insertable, Selectable } from "kysely";
import type {
  BackupCodesTable,
  CliLoginsTable,
  LinkedAccountsTable,
  LoginThrottlesTable,
  OneTimeTokensTable,
  PasskeysTable,
  UserDevicesTable,
} from "../schema-accounts.js";
import {
  fromBytes,
  fromDate,
  fromDateOrNull,
  fromFlag,
  toBytes,
  toDate,
  toDateOrNull,
  toFlag,
  toJson,
  toNumber,
  toStringArray,
  toStringMap,
} from "./mapping.js";

export function oneTimeTokenToRow(t: OneTimeTokenRecord): Insertable<OneTimeTokensTable> {
  return {
    id: t.id,
    purpose: t.purpose,
    token_hash: t.tokenHash,
    user_id: t.userId,
    data: toJson(t.data),
    created_at: fromDate(t.createdAt),
    expires_at: fromDate(t.expiresAt),
    consumed_at: fromDateOrNull(t.consumedAt),
  };
}

export function rowToOneTimeToken(r: Selectable<OneTimeTokensTable>): OneTimeTokenRecord {
  return {
    id: r.id,
    purpose: r.purpose as OneTimeTokenPurpose,
    tokenHash: r.token_hash,
    userId: r.user_id,
    data: toStringMap(r.data),
    createdAt: toDate(r.created_at),
    expiresAt: toDate(r.expires_at),
    consumedAt: toDateOrNull(r.consumed_at),
  };
}

export function passkeyToRow(p: PasskeyRecord): Insertable<PasskeysTable> {
  return {
    id: p.id,
    user_id: p.userId,
    name: p.name,
    public_key: fromBytes(p.publicKey),
    counter: p.counter,
    transports: toJson(p.transports),
    device_type: p.deviceType,
    backed_up: toFlag(p.backedUp),
    created_at: fromDate(p.createdAt),
    last_used_at: fromDateOrNull(p.lastUsedAt),
  };
}

export function rowToPasskey(r: Selectable<PasskeysTable>): PasskeyRecord {
  return {
    id: r.id,
    userId: r.user_id,
    name: r.name,
    publicKey: toBytes(r.public_key),
    counter: toNumber(r.counter),
    transports: toStringArray(r.transports),
    deviceType: r.device_type,
    backedUp: fromFlag(r.backed_up),
    createdAt: toDate(r.created_at),
    lastUsedAt: toDateOrNull(r.last_used_at),
  };
}

export function backupCodeToRow(c: BackupCodeRecord): Insertable<BackupCodesTable> {
  return {
    id: c.id,
    user_id: c.userId,
    code_hash: c.codeHash,
    created_at: fromDate(c.createdAt),
    used_at: fromDateOrNull(c.usedAt),
  };
}

export function rowToBackupCode(r: Selectable<BackupCodesTable>): BackupCodeRecord {
  return {
    id: r.id,
    userId: r.user_id,
    codeHash: r.code_hash,
    createdAt: toDate(r.created_at),
    usedAt: toDateOrNull(r.used_at),
  };
}

export function userDeviceToRow(d: UserDeviceRecord): Insertable<UserDevicesTable> {
  return {
    id: d.id,
    user_id: d.userId,
    session_id: d.sessionId,
    name: d.name,
    auth_method: d.authMethod,
    public_key: d.publicKey,
    created_at: fromDate(d.createdAt),
    expires_at: fromDate(d.expiresAt),
    last_used_at: fromDateOrNull(d.lastUsedAt),
  };
}

export function rowToUserDevice(r: Selectable<UserDevicesTable>): UserDeviceRecord {
  return {
    id: r.id,
    userId: r.user_id,
    sessionId: r.session_id,
    name: r.name,
    authMethod: r.auth_method,
    publicKey: r.public_key,
    createdAt: toDate(r.created_at),
    expiresAt: toDate(r.expires_at),
    lastUsedAt: toDateOrNull(r.last_used_at),
  };
}

export function cliLoginToRow(l: CliLoginRecord): Insertable<CliLoginsTable> {
  return {
    id: l.id,
    code_hash: l.codeHash,
    device_id: l.deviceId,
    device_name: l.deviceName,
    auth_method: l.authMethod,
    public_key: l.publicKey,
    ip_address: l.ipAddress,
    user_agent: l.userAgent,
    created_at: fromDate(l.createdAt),
    expires_at: fromDate(l.expiresAt),
    approved_by: l.approvedBy,
    approved_at: fromDateOrNull(l.approvedAt),
    user_code_hash: l.userCodeHash,
    code_failures: l.codeFailures,
    denied_at: fromDateOrNull(l.deniedAt),
    client_os: l.clientOs,
    client_version: l.clientVersion,
  };
}

export function rowToCliLogin(r: Selectable<CliLoginsTable>): CliLoginRecord {
  return {
    id: r.id,
    codeHash: r.code_hash,
    deviceId: r.device_id,
    deviceName: r.device_name,
    authMethod: r.auth_method,
    publicKey: r.public_key,
    ipAddress: r.ip_address,
    userAgent: r.user_agent,
    createdAt: toDate(r.created_at),
    expiresAt: toDate(r.expires_at),
    approvedBy: r.approved_by,
    approvedAt: toDateOrNull(r.approved_at),
    userCodeHash: r.user_code_hash,
    codeFailures: Number(r.code_failures),
    deniedAt: toDateOrNull(r.denied_at),
    clientOs: r.client_os,
    clientVersion: r.client_version,
  };
}

export function linkedAccountToRow(a: LinkedAccountRecord): Insertable<LinkedAccountsTable> {
  return {
    user_id: a.userId,
    provider: a.provider,
    provider_id: a.providerId,
    provider_email: a.providerEmail,
    provider_username: a.providerUsername,
    protocol: a.protocol,
    created_at: fromDate(a.createdAt),
  };
}

export function rowToLinkedAccount(r: Selectable<LinkedAccountsTable>): LinkedAccountRecord {
  return {
    userId: r.user_id,
    provider: r.provider,
    providerId: r.provider_id,
    providerEmail: r.provider_email,
    providerUsername: r.provider_username,
    protocol: r.protocol,
    createdAt: toDate(r.created_at),
  };
}

export function rowToLoginThrottle(r: Selectable<LoginThrottlesTable>): LoginThrottleRecord {
  return {
    key: r.key,
    failures: toNumber(r.failures),
    lastFailureAt: toDate(r.last_failure_at),
    previousFailureAt: toDateOrNull(r.previous_failure_at),
  };
}
