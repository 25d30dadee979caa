/**
 * WebAuthn credentials (`passkeys`).
 *
 * @module
 */
import type { PasskeyRecord, PasskeyRepository } from "@wap/core/storage";
import type { Insertable, Selectable } from "kysely";
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
} from "../lib/mapping.js";
import type { QueryRunner } from "../repositories.js";
import type { PasskeysTable } from "../schema-accounts.js";

function passkeyToRow(p: PasskeyRecord): Insertable<PasskeysTable> {
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

function rowToPasskey(r: Selectable<PasskeysTable>): PasskeyRecord {
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

export function createPasskeyRepository(run: QueryRunner): PasskeyRepository {
  return {
    async insert(passkey) {
      await run.write((db) => db.insertInto("passkeys").values(passkeyToRow(passkey)).execute());
    },
    async findById(id) {
      const row = await run.read((db) =>
        db.selectFrom("passkeys").selectAll().where("id", "=", id).executeTakeFirst(),
      );
      return row ? rowToPasskey(row) : null;
    },
    async listByUser(userId) {
      const rows = await run.read((db) =>
        db
          .selectFrom("passkeys")
          .selectAll()
          .where("user_id", "=", userId)
          .orderBy("created_at")
          .orderBy("id")
          .execute(),
      );
      return rows.map(rowToPasskey);
    },
    async rename(userId, id, name) {
      const row = await run.write((db) =>
        db
          .updateTable("passkeys")
          .set({ name })
          .where("user_id", "=", userId)
          .where("id", "=", id)
          .returningAll()
          .executeTakeFirst(),
      );
      return row ? rowToPasskey(row) : null;
    },
    async recordUse(id, counter, at) {
      await run.write((db) =>
        db
          .updateTable("passkeys")
          .set({ counter, last_used_at: fromDate(at) })
          .where("id", "=", id)
          .execute(),
      );
    },
    async delete(userId, id) {
      const result = await run.write((db) =>
        db.deleteFrom("passkeys").where("user_id", "=", userId).where("id", "=", id).executeTakeFirst(),
      );
      return result.numDeletedRows > 0n;
    },
  };
}
