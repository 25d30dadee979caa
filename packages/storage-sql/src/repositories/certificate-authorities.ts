/**
 * Certificate authorities and their retired keys (`certificate_authorities`,
 * `certificate_authority_keys`).
 *
 * @module
 */
import type {
  AuthorityKeyRecord,
  AuthorityKind,
  CertificateAuthorityRecord,
  CertificateAuthorityRepository,
  Repositories,
  RetiredAuthorityKeyRecord,
  RetiredAuthorityKeyRepository,
} from "@wap/core/storage";
import type { Insertable, Selectable, Updateable } from "kysely";
import type { SqlDialectTraits } from "../dialect.js";
import {
  fromBytes,
  fromDate,
  fromFlag,
  toBytes,
  toDate,
  toFlag,
  toJson,
  toNumber,
  toStringArray,
  toStringMap,
} from "../lib/mapping.js";
import { prepare } from "../lib/prepared.js";
import { deleteInWorkspace, updateInWorkspace } from "../lib/scoped.js";
import type { QueryRunner } from "../repositories.js";
import type { CertificateAuthoritiesTable, CertificateAuthorityKeysTable } from "../schema.js";

/** On the signing path: compiled once per dialect, run on the driver itself where it can be. */
const authorityByIdQuery = prepare((db, workspaceId: string, id: string) =>
  db
    .selectFrom("certificate_authorities")
    .selectAll()
    .where("workspace_id", "=", workspaceId)
    .where("id", "=", id),
);

/** On the signing path: compiled once per dialect, run on the driver itself where it can be. */
const defaultAuthorityQuery = prepare((db, workspaceId: string, kind: string) =>
  db
    .selectFrom("certificate_authorities")
    .selectAll()
    .where("workspace_id", "=", workspaceId)
    .where("authority_type", "=", kind)
    .where("is_default", "=", 1),
);

function retiredKeyToRow(k: RetiredAuthorityKeyRecord): Insertable<CertificateAuthorityKeysTable> {
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

function rowToAuthority(r: Selectable<CertificateAuthoritiesTable>): CertificateAuthorityRecord {
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

/** The incoming key of a staged rotation as the JSON `next_key` column holds it. */
function nextKeyToColumn(key: AuthorityKeyRecord | null): string | null {
  if (key === null) return null;
  return JSON.stringify({
    ...key,
    notBefore: key.notBefore.getTime(),
    notAfter: key.notAfter.getTime(),
    sealedPrivateKey: Buffer.from(key.sealedPrivateKey).toString("base64"),
  });
}

function rowToRetiredKey(r: Selectable<CertificateAuthorityKeysTable>): RetiredAuthorityKeyRecord {
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

function authorityToRow(c: CertificateAuthorityRecord): Insertable<CertificateAuthoritiesTable> {
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

type AuthorityPatch = Parameters<Repositories["certificateAuthorities"]["update"]>[2];

function authorityPatch(patch: AuthorityPatch, updatedAt: Date): Updateable<CertificateAuthoritiesTable> {
  const set: Updateable<CertificateAuthoritiesTable> = { updated_at: fromDate(updatedAt) };
  if (patch.name !== undefined) set.name = patch.name;
  if (patch.description !== undefined) set.description = patch.description;
  if (patch.isActive !== undefined) set.is_active = toFlag(patch.isActive);
  if (patch.isDefault !== undefined) set.is_default = toFlag(patch.isDefault);
  if (patch.allowedKeyTypes !== undefined) set.allowed_key_types = toJson(patch.allowedKeyTypes);
  if (patch.lifetimeSeconds !== undefined) set.lifetime_seconds = patch.lifetimeSeconds;
  if (patch.userDefaultTtlSeconds !== undefined) set.user_default_ttl_seconds = patch.userDefaultTtlSeconds;
  if (patch.userMaxTtlSeconds !== undefined) set.user_max_ttl_seconds = patch.userMaxTtlSeconds;
  if (patch.hostDefaultTtlSeconds !== undefined) set.host_default_ttl_seconds = patch.hostDefaultTtlSeconds;
  if (patch.hostMaxTtlSeconds !== undefined) set.host_max_ttl_seconds = patch.hostMaxTtlSeconds;
  if (patch.userExtensions !== undefined) set.user_extensions = toJson(patch.userExtensions);
  if (patch.userCriticalOptions !== undefined) set.user_critical_options = toJson(patch.userCriticalOptions);
  return set;
}

export function createCertificateAuthorityRepository(
  run: QueryRunner,
  dialect: SqlDialectTraits,
): CertificateAuthorityRepository {
  return {
    async insert(ca) {
      await run.write((db) => db.insertInto("certificate_authorities").values(authorityToRow(ca)).execute());
    },
    async findById(workspaceId, id) {
      const { rows } = await run.read((db) =>
        authorityByIdQuery.execute(run, db, dialect.name, workspaceId, id),
      );
      return rows[0] ? rowToAuthority(rows[0]) : null;
    },
    async findForPublication(id) {
      const row = await run.read((db) =>
        db.selectFrom("certificate_authorities").selectAll().where("id", "=", id).executeTakeFirst(),
      );
      return row ? rowToAuthority(row) : null;
    },
    async findDefault(workspaceId, kind) {
      const { rows } = await run.read((db) =>
        defaultAuthorityQuery.execute(run, db, dialect.name, workspaceId, kind),
      );
      return rows[0] ? rowToAuthority(rows[0]) : null;
    },
    async list(workspaceId) {
      const rows = await run.read((db) =>
        db
          .selectFrom("certificate_authorities")
          .selectAll()
          .where("workspace_id", "=", workspaceId)
          .orderBy("created_at")
          .orderBy("id")
          .execute(),
      );
      return rows.map(rowToAuthority);
    },
    async update(workspaceId, id, patch, updatedAt) {
      const set = authorityPatch(patch, updatedAt);
      const row = await run.write((db) =>
        updateInWorkspace(db, "certificate_authorities", workspaceId, id, set),
      );
      return row ? rowToAuthority(row) : null;
    },
    async clearDefault(workspaceId, kind: AuthorityKind, updatedAt) {
      // Concurrent "make this the default" transactions queue here instead of colliding on the
      // one-default index, so none of them has to fail and retry.
      const lock = dialect.serializeOn(`default-ca/${workspaceId}/${kind}`);
      if (lock) await run.write((db) => lock.execute(db));
      await run.write((db) =>
        db
          .updateTable("certificate_authorities")
          .set({ is_default: 0, updated_at: fromDate(updatedAt) })
          .where("workspace_id", "=", workspaceId)
          .where("authority_type", "=", kind)
          .where("is_default", "=", 1)
          .execute(),
      );
    },
    async replaceKey(workspaceId, id, expectedVersion, key, updatedAt) {
      const row = await run.write((db) =>
        db
          .updateTable("certificate_authorities")
          .set({
            key_type: key.keyType,
            key_bits: key.keyBits,
            certificate: key.certificate,
            public_key: key.publicKey,
            serial_number: key.serialNumber,
            subject: key.subject,
            not_before: fromDate(key.notBefore),
            not_after: fromDate(key.notAfter),
            sealed_private_key: fromBytes(key.sealedPrivateKey),
            key_version: expectedVersion + 1,
            rotation_phase: "none",
            next_key: null,
            updated_at: fromDate(updatedAt),
          })
          .where("workspace_id", "=", workspaceId)
          .where("id", "=", id)
          .where("key_version", "=", expectedVersion)
          .returningAll()
          .executeTakeFirst(),
      );
      return row ? rowToAuthority(row) : null;
    },
    async setRotation(workspaceId, id, expected, next, updatedAt) {
      const row = await run.write((db) =>
        db
          .updateTable("certificate_authorities")
          .set({
            rotation_phase: next.phase,
            next_key: nextKeyToColumn(next.nextKey),
            updated_at: fromDate(updatedAt),
          })
          .where("workspace_id", "=", workspaceId)
          .where("id", "=", id)
          .where("key_version", "=", expected.keyVersion)
          .where("rotation_phase", "=", expected.phase)
          .returningAll()
          .executeTakeFirst(),
      );
      return row ? rowToAuthority(row) : null;
    },
    async delete(workspaceId, id) {
      return run.write((db) => deleteInWorkspace(db, "certificate_authorities", workspaceId, id));
    },
  };
}

export function createRetiredAuthorityKeyRepository(run: QueryRunner): RetiredAuthorityKeyRepository {
  return {
    async insert(key) {
      await run.write((db) =>
        db.insertInto("certificate_authority_keys").values(retiredKeyToRow(key)).execute(),
      );
    },
    async list(workspaceId, caId) {
      const rows = await run.read((db) =>
        db
          .selectFrom("certificate_authority_keys")
          .selectAll()
          .where("workspace_id", "=", workspaceId)
          .where("ca_id", "=", caId)
          .orderBy("version", "desc")
          .execute(),
      );
      return rows.map(rowToRetiredKey);
    },
  };
}
