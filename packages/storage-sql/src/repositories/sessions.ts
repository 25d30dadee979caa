/**
 * Sign-in sessions and their refresh tokens (`auth_sessions`, `refresh_tokens`).
 *
 * @module
 */
import type {
  AuthSessionRecord,
  AuthSessionRepository,
  RefreshTokenRecord,
  RefreshTokenRepository,
} from "@wap/core/storage";
import type { Insertable, Selectable } from "kysely";
import type { SqlDialectTraits } from "../dialect.js";
import { fromDate, fromDateOrNull, toDate, toDateOrNull } from "../lib/mapping.js";
import { prepare } from "../lib/prepared.js";
import type { QueryRunner } from "../repositories.js";
import type { AuthSessionsTable, RefreshTokensTable } from "../schema.js";

/** On the signing path: compiled once per dialect, run on the driver itself where it can be. */
const sessionByIdQuery = prepare((db, id: string) =>
  db.selectFrom("auth_sessions").selectAll().where("id", "=", id),
);

function rowToRefreshToken(r: Selectable<RefreshTokensTable>): RefreshTokenRecord {
  return {
    id: r.id,
    sessionId: r.session_id,
    tokenHash: r.token_hash,
    createdAt: toDate(r.created_at),
    expiresAt: toDate(r.expires_at),
    rotatedAt: toDateOrNull(r.rotated_at),
  };
}

function sessionToRow(s: AuthSessionRecord): Insertable<AuthSessionsTable> {
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

function rowToSession(r: Selectable<AuthSessionsTable>): AuthSessionRecord {
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

function refreshTokenToRow(t: RefreshTokenRecord): Insertable<RefreshTokensTable> {
  return {
    id: t.id,
    session_id: t.sessionId,
    token_hash: t.tokenHash,
    created_at: fromDate(t.createdAt),
    expires_at: fromDate(t.expiresAt),
    rotated_at: fromDateOrNull(t.rotatedAt),
  };
}

export function createAuthSessionRepository(
  run: QueryRunner,
  dialect: SqlDialectTraits,
): AuthSessionRepository {
  return {
    async insert(session) {
      await run.write((db) => db.insertInto("auth_sessions").values(sessionToRow(session)).execute());
    },
    async findById(id) {
      const { rows } = await run.read((db) => sessionByIdQuery.execute(run, db, dialect.name, id));
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
    async listActiveForUser(userId, at) {
      const rows = await run.read((db) =>
        db
          .selectFrom("auth_sessions")
          .selectAll()
          .where("user_id", "=", userId)
          .where("revoked_at", "is", null)
          .where("expires_at", ">", fromDate(at))
          .orderBy("created_at")
          .orderBy("id")
          .execute(),
      );
      return rows.map(rowToSession);
    },
    async revokeAllForUser(userId, at, exceptId) {
      await run.write((db) => {
        let query = db
          .updateTable("auth_sessions")
          .set({ revoked_at: fromDate(at) })
          .where("user_id", "=", userId)
          .where("revoked_at", "is", null);
        if (exceptId !== undefined) query = query.where("id", "<>", exceptId);
        return query.execute();
      });
    },
  };
}

export function createRefreshTokenRepository(run: QueryRunner): RefreshTokenRepository {
  return {
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
  };
}
