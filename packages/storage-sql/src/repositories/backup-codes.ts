/**
 * Backup codes (`backup_codes`).
 *
 * @module
 */
import type { BackupCodeRecord, BackupCodeRepository } from "@wap/core/storage";
import type { Insertable, Selectable } from "kysely";
import { fromDate, fromDateOrNull, toDate, toDateOrNull } from "../lib/mapping.js";
import type { QueryRunner } from "../repositories.js";
import type { BackupCodesTable } from "../schema-accounts.js";

function rowToBackupCode(r: Selectable<BackupCodesTable>): BackupCodeRecord {
  return {
    id: r.id,
    userId: r.user_id,
    codeHash: r.code_hash,
    createdAt: toDate(r.created_at),
    usedAt: toDateOrNull(r.used_at),
  };
}

function backupCodeToRow(c: BackupCodeRecord): Insertable<BackupCodesTable> {
  return {
    id: c.id,
    user_id: c.userId,
    code_hash: c.codeHash,
    created_at: fromDate(c.createdAt),
    used_at: fromDateOrNull(c.usedAt),
  };
}

export function createBackupCodeRepository(run: QueryRunner): BackupCodeRepository {
  return {
    async insertMany(codes) {
      if (codes.length === 0) return;
      await run.write((db) => db.insertInto("backup_codes").values(codes.map(backupCodeToRow)).execute());
    },
    async listByUser(userId) {
      const rows = await run.read((db) =>
        db
          .selectFrom("backup_codes")
          .selectAll()
          .where("user_id", "=", userId)
          .orderBy("created_at")
          .orderBy("id")
          .execute(),
      );
      return rows.map(rowToBackupCode);
    },
    async consume(userId, codeHash, at) {
      const result = await run.write((db) =>
        db
          .updateTable("backup_codes")
          .set({ used_at: fromDate(at) })
          .where("user_id", "=", userId)
          .where("code_hash", "=", codeHash)
          .where("used_at", "is", null)
          .executeTakeFirst(),
      );
      return result.numUpdatedRows > 0n;
    },
    async deleteForUser(userId) {
      await run.write((db) => db.deleteFrom("backup_codes").where("user_id", "=", userId).execute());
    },
  };
}
