/**
 * Every query of the port, written once for both dialects.
 *
 * @module
 */
import type {
  AuthorityKind,
  DaemonFilter,
  DaemonRecord,
  IssuedCertificateFilter,
  Repositories,
  ServiceAccountFilter,
  ServiceAccountRecord,
  TargetFilter,
  TargetRecord,
} from "@wap/core/storage";
import {
  type Expression,
  type ExpressionBuilder,
  type Kysely,
  type SqlBool,
  sql,
  type Updateable,
} from "kysely";
import type { SqlDialectTraits } from "./dialect.js";
import { hot } from "./hot-queries.js";
import {
  auditEventToRow,
  authorityToRow,
  daemonToRow,
  fold,
  fromBytes,
  fromDate,
  fromDateOrNull,
  issuedCertificateToRow,
  likeContains,
  memberToRow,
  nextKeyToColumn,
  refreshTokenToRow,
  retiredKeyToRow,
  rowToAuditEvent,
  rowToAuthority,
  rowToDaemon,
  rowToIssuedCertificate,
  rowToMember,
  rowToRefreshToken,
  rowToRetiredKey,
  rowToSecret,
  rowToServiceAccount,
  rowToSession,
  rowToTarget,
  rowToUser,
  rowToWorkspace,
  secretToRow,
  serviceAccountToRow,
  sessionToRow,
  targetToRow,
  toDate,
  toFlag,
  toJson,
  toNumber,
  userToRow,
  workspaceToRow,
} from "./lib/mapping.js";
import { listPage, listPageProbe } from "./lib/page.js";
import { deleteInWorkspace, findInWorkspace, updateInWorkspace } from "./lib/scoped.js";
import {
  createAccountRepositories,
  memberAccountQueries,
  sessionAccountQueries,
  userAccountQueries,
} from "./repositories-accounts.js";
import { auditFilter } from "./repositories-audit.js";
import { createDaemonProtocolRepositories, daemonProtocolQueries } from "./repositories-daemons.js";
import { createRecordingRepositories } from "./repositories-recordings.js";
import { createSealedValueRepository } from "./repositories-sealed.js";
import { createSsoBillingRepositories } from "./repositories-sso-billing.js";
import { createWorkspaceAccessRepositories } from "./repositories-workspace-access.js";
import type {
  CertificateAuthoritiesTable,
  DaemonsTable,
  Database,
  ServiceAccountsTable,
  TargetsTable,
  WorkspacesTable,
} from "./schema.js";

/**
 * Runs one repository call on the right connection (the pool, or the current transaction) and
 * translates driver errors. `write` marks statements that may fail on a constraint.
 */
export interface QueryRunner {
  read<T>(fn: (db: Kysely<Database>) => Promise<T>): Promise<T>;
  write<T>(fn: (db: Kysely<Database>) => Promise<T>): Promise<T>;
}

/** `name like '%q%'` on a folded column; `!` escapes the wildcards (see likeContains). */
function foldedContains(column: string, query: string): Expression<SqlBool> {
  return sql<SqlBool>`${sql.ref(column)} like ${likeContains(fold(query))} escape '!'`;
}

/** Builds the repositories over a runner. */
export function createRepositories(run: QueryRunner, dialect: SqlDialectTraits): Repositories {
  return {
    ...createAccountRepositories(run),
    ...createWorkspaceAccessRepositories(run, dialect),
    ...createSsoBillingRepositories(run, dialect.name),
    ...createDaemonProtocolRepositories(run),
    ...createRecordingRepositories(run),
    sealedValues: createSealedValueRepository(run),
    users: {
      ...userAccountQueries(run),
      async insert(user) {
        await run.write((db) => db.insertInto("users").values(userToRow(user)).execute());
      },
      async findById(id) {
        const row = await run.read((db) =>
          db.selectFrom("users").selectAll().where("id", "=", id).executeTakeFirst(),
        );
        return row ? rowToUser(row) : null;
      },
      async findByEmail(email) {
        // Emails are stored lower-cased; lower-case the lookup too so callers cannot miss by case.
        const row = await run.read((db) =>
          db.selectFrom("users").selectAll().where("email", "=", email.toLowerCase()).executeTakeFirst(),
        );
        return row ? rowToUser(row) : null;
      },
      async findByUsername(username) {
        // Usernames are unique whatever their case (users_username_lower_key).
        const row = await run.read((db) =>
          db
            .selectFrom("users")
            .selectAll()
            .where(sql`lower(username)`, "=", username.toLowerCase())
            .executeTakeFirst(),
        );
        return row ? rowToUser(row) : null;
      },
    },

    authSessions: {
      ...sessionAccountQueries(run),
      async insert(session) {
        await run.write((db) => db.insertInto("auth_sessions").values(sessionToRow(session)).execute());
      },
      async findById(id) {
        const { rows } = await run.read((db) => hot.sessionById.execute(db, dialect.name, id));
        return rows[0] ? rowToSession(rows[0]) : null;
      },
      async revoke(id, at) {
        // Idempotent: the first revocation time stands.
        await run.write((db) =>
          db
            .updateTable("auth_sessions")
            .set({ revoked_at: fromDate(at) })
            .where("id", "=", id)
            .where("revoked_at", "is", null)
            .execute(),
        );
      },
    },

    refreshTokens: {
      async insert(token) {
        await run.write((db) => db.insertInto("refresh_tokens").values(refreshTokenToRow(token)).execute());
      },
      async findByHash(tokenHash) {
        const row = await run.read((db) =>
          db.selectFrom("refresh_tokens").selectAll().where("token_hash", "=", tokenHash).executeTakeFirst(),
        );
        return row ? rowToRefreshToken(row) : null;
      },
      async markRotated(id, at) {
        // One conditional UPDATE: the database decides the single winner, on every engine.
        const result = await run.write((db) =>
          db
            .updateTable("refresh_tokens")
            .set({ rotated_at: fromDate(at) })
            .where("id", "=", id)
            .where("rotated_at", "is", null)
            .executeTakeFirst(),
        );
        return result.numUpdatedRows > 0n;
      },
    },

    workspaces: {
      async insert(workspace) {
        await run.write((db) => db.insertInto("workspaces").values(workspaceToRow(workspace)).execute());
      },
      async findById(id) {
        const row = await run.read((db) =>
          db.selectFrom("workspaces").selectAll().where("id", "=", id).executeTakeFirst(),
        );
        return row ? rowToWorkspace(row) : null;
      },
      async listForUser(userId) {
        const rows = await run.read((db) =>
          db
            .selectFrom("workspaces")
            .innerJoin("workspace_members", "workspace_members.workspace_id", "workspaces.id")
            .selectAll("workspaces")
            .where("workspace_members.user_id", "=", userId)
            .orderBy("workspaces.created_at")
            .orderBy("workspaces.id")
            .execute(),
        );
        return rows.map(rowToWorkspace);
      },
      async update(id, patch, updatedAt) {
        const set: Updateable<WorkspacesTable> = { updated_at: fromDate(updatedAt) };
        if (patch.name !== undefined) set.name = patch.name;
        if (patch.description !== undefined) set.description = patch.description;
        if (patch.enrollAutoApprove !== undefined) set.enroll_auto_approve = toFlag(patch.enrollAutoApprove);
        if (patch.enrollExpiresAt !== undefined)
          set.enroll_expires_at = fromDateOrNull(patch.enrollExpiresAt);
        if (patch.inviteExpiresAt !== undefined)
          set.invite_expires_at = fromDateOrNull(patch.inviteExpiresAt);
        const row = await run.write((db) =>
          db.updateTable("workspaces").set(set).where("id", "=", id).returningAll().executeTakeFirst(),
        );
        return row ? rowToWorkspace(row) : null;
      },
      async delete(id) {
        // Foreign keys cascade to everything in the workspace, in this one statement.
        const result = await run.write((db) =>
          db.deleteFrom("workspaces").where("id", "=", id).executeTakeFirst(),
        );
        return result.numDeletedRows > 0n;
      },
    },

    members: {
      ...memberAccountQueries(run),
      async insert(member) {
        await run.write((db) => db.insertInto("workspace_members").values(memberToRow(member)).execute());
      },
      async find(workspaceId, userId) {
        const { rows } = await run.read((db) => hot.member.execute(db, dialect.name, workspaceId, userId));
        return rows[0] ? rowToMember(rows[0]) : null;
      },
      async listByWorkspace(workspaceId) {
        const rows = await run.read((db) =>
          db
            .selectFrom("workspace_members")
            .selectAll()
            .where("workspace_id", "=", workspaceId)
            .orderBy("created_at")
            .orderBy("user_id")
            .execute(),
        );
        return rows.map(rowToMember);
      },
    },

    certificateAuthorities: {
      async insert(ca) {
        await run.write((db) =>
          db.insertInto("certificate_authorities").values(authorityToRow(ca)).execute(),
        );
      },
      async findById(workspaceId, id) {
        const { rows } = await run.read((db) => hot.authorityById.execute(db, dialect.name, workspaceId, id));
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
          hot.defaultAuthority.execute(db, dialect.name, workspaceId, kind),
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
    },

    retiredAuthorityKeys: {
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
    },

    targets: {
      async insert(target) {
        await run.write((db) => db.insertInto("targets").values(targetToRow(target)).execute());
      },
      async findById(workspaceId, id) {
        const row = await run.read((db) => findInWorkspace(db, "targets", workspaceId, id));
        return row ? rowToTarget(row) : null;
      },
      async list(workspaceId, filter) {
        const where = targetWhere(dialect, workspaceId, filter);
        const page = await run.read((db) =>
          listPage(
            db.selectFrom("targets").where(where),
            (q) => q.selectAll().orderBy("created_at").orderBy("id"),
            filter,
          ),
        );
        return { items: page.rows.map(rowToTarget), total: page.total };
      },
      async update(workspaceId, id, patch, updatedAt) {
        const row = await run.write((db) =>
          updateInWorkspace(db, "targets", workspaceId, id, targetPatch(patch, updatedAt)),
        );
        return row ? rowToTarget(row) : null;
      },
      async delete(workspaceId, id) {
        return run.write((db) => deleteInWorkspace(db, "targets", workspaceId, id));
      },
      async countByCa(workspaceId, caId) {
        const row = await run.read((db) =>
          db
            .selectFrom("targets")
            .where("workspace_id", "=", workspaceId)
            .where("ca_id", "=", caId)
            .select((eb) => eb.fn.countAll().as("n"))
            .executeTakeFirstOrThrow(),
        );
        return toNumber(row.n);
      },
    },

    issuedCertificates: {
      async insert(certificate) {
        await run.write((db) =>
          hot.insertIssuedCertificate.execute(db, dialect.name, issuedCertificateToRow(certificate)),
        );
      },
      async findBySerial(workspaceId, caId, serial) {
        const row = await run.read((db) =>
          db
            .selectFrom("issued_certificates")
            .selectAll()
            .where("workspace_id", "=", workspaceId)
            .where("ca_id", "=", caId)
            .where("serial", "=", serial)
            .executeTakeFirst(),
        );
        return row ? rowToIssuedCertificate(row) : null;
      },
      async findById(workspaceId, id) {
        const row = await run.read((db) => findInWorkspace(db, "issued_certificates", workspaceId, id));
        return row ? rowToIssuedCertificate(row) : null;
      },
      async list(workspaceId, filter) {
        const where = issuedWhere(workspaceId, filter);
        const page = await run.read((db) =>
          listPageProbe(
            db.selectFrom("issued_certificates").where(where),
            (q) => q.selectAll().orderBy("created_at", "desc").orderBy("id", "desc"),
            filter,
          ),
        );
        return { items: page.rows.map(rowToIssuedCertificate), total: page.total };
      },
      async revoke(workspaceId, selector, revocation) {
        const at = fromDate(revocation.revokedAt);
        const rows = await run.write((db) => {
          let query = db
            .updateTable("issued_certificates")
            .set({
              revoked_at: at,
              revocation_reason: revocation.reason,
              revoked_by: revocation.revokedBy,
            })
            .where("workspace_id", "=", workspaceId)
            .where("revoked_at", "is", null)
            .where("valid_before", ">", at);
          if (selector.by === "serial") {
            query = query.where("ca_id", "=", selector.caId).where("serial", "=", selector.serial);
          } else if (selector.by === "key") {
            query = query.where("key_fingerprint", "=", selector.keyFingerprint);
            if (selector.caId !== undefined) query = query.where("ca_id", "=", selector.caId);
          } else {
            query = query.where("requester_id", "=", selector.requesterId);
          }
          return query.returningAll().execute();
        });
        return rows.map(rowToIssuedCertificate);
      },
      async revokeAllOfRequester(requesterId, revocation) {
        const at = fromDate(revocation.revokedAt);
        const rows = await run.write((db) =>
          db
            .updateTable("issued_certificates")
            .set({ revoked_at: at, revocation_reason: revocation.reason, revoked_by: revocation.revokedBy })
            .where("requester_id", "=", requesterId)
            .where("revoked_at", "is", null)
            .where("valid_before", ">", at)
            .returningAll()
            .execute(),
        );
        return rows.map(rowToIssuedCertificate);
      },
      async listRevoked(workspaceId, caId, now) {
        const rows = await run.read((db) =>
          db
            .selectFrom("issued_certificates")
            .selectAll()
            .where("ca_id", "=", caId)
            .where("revoked_at", "is not", null)
            .where("valid_before", ">", fromDate(now))
            .where("workspace_id", "=", workspaceId)
            .execute(),
        );
        return rows.map(rowToIssuedCertificate);
      },
      async latestExpiry(workspaceId, caId, caKeyVersion) {
        const row = await run.read((db) =>
          db
            .selectFrom("issued_certificates")
            .where("ca_id", "=", caId)
            .where("ca_key_version", "=", caKeyVersion)
            .where("workspace_id", "=", workspaceId)
            .select((eb) => eb.fn.max("valid_before").as("latest"))
            .executeTakeFirst(),
        );
        return row?.latest === null || row?.latest === undefined ? null : toDate(row.latest);
      },
    },

    serviceAccounts: {
      async insert(account) {
        await run.write((db) =>
          db.insertInto("service_accounts").values(serviceAccountToRow(account)).execute(),
        );
      },
      async findById(workspaceId, id) {
        const row = await run.read((db) => findInWorkspace(db, "service_accounts", workspaceId, id));
        return row ? rowToServiceAccount(row) : null;
      },
      async findByIdForAuthentication(id) {
        const row = await run.read((db) =>
          db.selectFrom("service_accounts").selectAll().where("id", "=", id).executeTakeFirst(),
        );
        return row ? rowToServiceAccount(row) : null;
      },
      async list(workspaceId, filter) {
        const where = serviceAccountWhere(dialect, workspaceId, filter);
        const page = await run.read((db) =>
          listPage(
            db.selectFrom("service_accounts").where(where),
            (q) => q.selectAll().orderBy("created_at").orderBy("id"),
            filter,
          ),
        );
        return { items: page.rows.map(rowToServiceAccount), total: page.total };
      },
      async update(workspaceId, id, patch, updatedAt) {
        const set = serviceAccountPatch(patch, updatedAt);
        const row = await run.write((db) => updateInWorkspace(db, "service_accounts", workspaceId, id, set));
        return row ? rowToServiceAccount(row) : null;
      },
      async touchLastUsed(id, at) {
        await run.write((db) =>
          db
            .updateTable("service_accounts")
            .set({ last_used_at: fromDate(at) })
            .where("id", "=", id)
            .execute(),
        );
      },
      async delete(workspaceId, id) {
        return run.write((db) => deleteInWorkspace(db, "service_accounts", workspaceId, id));
      },
    },

    daemons: {
      ...daemonProtocolQueries(run),
      async insert(daemon) {
        await run.write((db) => db.insertInto("daemons").values(daemonToRow(daemon)).execute());
      },
      async findById(workspaceId, id) {
        const row = await run.read((db) => findInWorkspace(db, "daemons", workspaceId, id));
        return row ? rowToDaemon(row) : null;
      },
      async list(workspaceId, filter) {
        const where = daemonWhere(workspaceId, filter);
        const page = await run.read((db) =>
          listPage(
            db.selectFrom("daemons").where(where),
            (q) => q.selectAll().orderBy("created_at").orderBy("id"),
            filter,
          ),
        );
        return { items: page.rows.map(rowToDaemon), total: page.total };
      },
      async update(workspaceId, id, patch, updatedAt) {
        const set = daemonPatch(patch, updatedAt);
        const row = await run.write((db) => updateInWorkspace(db, "daemons", workspaceId, id, set));
        return row ? rowToDaemon(row) : null;
      },
      async delete(workspaceId, id) {
        return run.write((db) => deleteInWorkspace(db, "daemons", workspaceId, id));
      },
    },

    auditEvents: {
      async append(event) {
        await run.write((db) => hot.insertAuditEvent.execute(db, dialect.name, auditEventToRow(event)));
      },
      async list(workspaceId, filter) {
        const where = auditFilter(workspaceId, filter, dialect.name);
        const page = await run.read((db) =>
          listPage(
            db.selectFrom("audit_events").where(where),
            (q) => q.selectAll().orderBy("occurred_at", "desc").orderBy("seq", "desc"),
            filter,
          ),
        );
        return { items: page.rows.map(rowToAuditEvent), total: page.total };
      },
    },

    secrets: {
      async find(name) {
        const row = await run.read((db) =>
          db.selectFrom("secrets").selectAll().where("name", "=", name).executeTakeFirst(),
        );
        return row ? rowToSecret(row) : null;
      },
      async insertIfAbsent(secret) {
        // Losers of a race insert nothing and read the winner's row.
        const row = await run.write(async (db) => {
          await db
            .insertInto("secrets")
            .values(secretToRow(secret))
            .onConflict((oc) => oc.column("name").doNothing())
            .execute();
          return db
            .selectFrom("secrets")
            .selectAll()
            .where("name", "=", secret.name)
            .executeTakeFirstOrThrow();
        });
        return rowToSecret(row);
      },
    },
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

function serviceAccountPatch(
  patch: Partial<Pick<ServiceAccountRecord, "name" | "description" | "role" | "tags">>,
  updatedAt: Date,
): Updateable<ServiceAccountsTable> {
  const set: Updateable<ServiceAccountsTable> = { updated_at: fromDate(updatedAt) };
  if (patch.name !== undefined) {
    set.name = patch.name;
    set.name_folded = fold(patch.name);
  }
  if (patch.description !== undefined) {
    set.description = patch.description;
    set.description_folded = fold(patch.description);
  }
  if (patch.role !== undefined) set.role = patch.role;
  if (patch.tags !== undefined) set.tags = toJson(patch.tags);
  return set;
}

function daemonPatch(
  patch: Partial<
    Pick<DaemonRecord, "status" | "recordSessions" | "metadata" | "name" | "targetId" | "onlineSince">
  >,
  updatedAt: Date,
): Updateable<DaemonsTable> {
  const set: Updateable<DaemonsTable> = { updated_at: fromDate(updatedAt) };
  if (patch.status !== undefined) set.status = patch.status;
  if (patch.recordSessions !== undefined) set.record_sessions = toFlag(patch.recordSessions);
  if (patch.metadata !== undefined) set.metadata = toJson(patch.metadata);
  if (patch.name !== undefined) {
    set.name = patch.name;
    set.name_folded = fold(patch.name);
  }
  if (patch.targetId !== undefined) set.target_id = patch.targetId;
  if (patch.onlineSince !== undefined) set.online_since = fromDateOrNull(patch.onlineSince);
  return set;
}

function targetPatch(
  patch: Partial<
    Pick<TargetRecord, "caId" | "daemonId" | "name" | "description" | "tags" | "endpoints" | "metadata">
  >,
  updatedAt: Date,
): Updateable<TargetsTable> {
  const set: Updateable<TargetsTable> = { updated_at: fromDate(updatedAt) };
  if (patch.caId !== undefined) set.ca_id = patch.caId;
  if (patch.daemonId !== undefined) set.daemon_id = patch.daemonId;
  if (patch.name !== undefined) {
    set.name = patch.name;
    set.name_folded = fold(patch.name);
  }
  if (patch.description !== undefined) set.description = patch.description;
  if (patch.tags !== undefined) set.tags = toJson(patch.tags);
  if (patch.endpoints !== undefined) set.endpoints = toJson(patch.endpoints);
  if (patch.metadata !== undefined) set.metadata = toJson(patch.metadata);
  return set;
}

function targetWhere(dialect: SqlDialectTraits, workspaceId: string, filter: TargetFilter) {
  return (eb: ExpressionBuilder<Database, "targets">): Expression<SqlBool> => {
    const conditions: Expression<SqlBool>[] = [eb("workspace_id", "=", workspaceId)];
    if (filter.caId !== undefined) conditions.push(eb("ca_id", "=", filter.caId));
    if (filter.daemonId !== undefined) conditions.push(eb("daemon_id", "=", filter.daemonId));
    if (filter.query) {
      // Names are ASCII (their pattern); descriptions fold their ASCII letters on every engine.
      const pattern = likeContains(fold(filter.query));
      conditions.push(
        eb.or([
          sql<SqlBool>`${sql.ref("targets.name_folded")} like ${pattern} escape '!'`,
          sql<SqlBool>`lower(${sql.ref("targets.description")}) like ${pattern} escape '!'`,
        ]),
      );
    }
    for (const tag of filter.tags ?? []) conditions.push(dialect.jsonArrayContains("targets.tags", tag));
    if (filter.principals && filter.principals.length > 0) {
      conditions.push(
        eb.exists(
          eb
            .selectFrom("principals")
            .select("principals.id")
            .whereRef("principals.workspace_id", "=", "targets.workspace_id")
            .whereRef("principals.target_id", "=", "targets.id")
            .where("principals.username", "in", [...filter.principals]),
        ),
      );
    }
    return eb.and(conditions);
  };
}

function issuedWhere(workspaceId: string, filter: IssuedCertificateFilter) {
  return (eb: ExpressionBuilder<Database, "issued_certificates">): Expression<SqlBool> => {
    const conditions: Expression<SqlBool>[] = [eb("workspace_id", "=", workspaceId)];
    if (filter.caId !== undefined) conditions.push(eb("ca_id", "=", filter.caId));
    if (filter.kind !== undefined) conditions.push(eb("kind", "=", filter.kind));
    if (filter.requesterId !== undefined) conditions.push(eb("requester_id", "=", filter.requesterId));
    if (filter.targetId !== undefined) conditions.push(eb("target_id", "=", filter.targetId));
    // Valid at some instant of [validFrom, validUntil): starts before its end, ends after its start.
    if (filter.validFrom !== undefined) conditions.push(eb("valid_before", ">", fromDate(filter.validFrom)));
    if (filter.validUntil !== undefined) conditions.push(eb("valid_after", "<", fromDate(filter.validUntil)));
    if (filter.revoked !== undefined)
      conditions.push(eb("revoked_at", filter.revoked ? "is not" : "is", null));
    return eb.and(conditions);
  };
}

function serviceAccountWhere(dialect: SqlDialectTraits, workspaceId: string, filter: ServiceAccountFilter) {
  return (eb: ExpressionBuilder<Database, "service_accounts">): Expression<SqlBool> => {
    const conditions: Expression<SqlBool>[] = [eb("workspace_id", "=", workspaceId)];
    if (filter.query) {
      conditions.push(
        eb.or([
          foldedContains("name_folded", filter.query),
          foldedContains("description_folded", filter.query),
        ]),
      );
    }
    if (filter.role) conditions.push(eb("role", "=", filter.role));
    for (const tag of filter.tags ?? [])
      conditions.push(dialect.jsonArrayContains("service_accounts.tags", tag));
    return eb.and(conditions);
  };
}

function daemonWhere(workspaceId: string, filter: DaemonFilter) {
  return (eb: ExpressionBuilder<Database, "daemons">): Expression<SqlBool> => {
    const conditions: Expression<SqlBool>[] = [eb("workspace_id", "=", workspaceId)];
    if (filter.query) conditions.push(foldedContains("name_folded", filter.query));
    if (filter.online !== undefined) {
      conditions.push(eb("online_since", filter.online ? "is not" : "is", null));
    }
    if (filter.status !== undefined) conditions.push(eb("status", "=", filter.status));
    return eb.and(conditions);
  };
}
