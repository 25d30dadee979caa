/**
 * CLI devices and their pending logins (`user_devices`, `cli_logins`).
 *
 * @module
 */
import type {
  CliLoginRecord,
  CliLoginRepository,
  UserDeviceRecord,
  UserDeviceRepository,
} from "@wap/core/storage";
import type { Insertable, Selectable } from "kysely";
import { fromDate, fromDateOrNull, toDate, toDateOrNull } from "../lib/mapping.js";
import type { QueryRunner } from "../repositories.js";
import type { CliLoginsTable, UserDevicesTable } from "../schema-accounts.js";

function rowToUserDevice(r: Selectable<UserDevicesTable>): UserDeviceRecord {
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

function cliLoginToRow(l: CliLoginRecord): Insertable<CliLoginsTable> {
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

function rowToCliLogin(r: Selectable<CliLoginsTable>): CliLoginRecord {
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

function userDeviceToRow(d: UserDeviceRecord): Insertable<UserDevicesTable> {
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

export function createUserDeviceRepository(run: QueryRunner): UserDeviceRepository {
  return {
    async insert(device) {
      await run.write((db) => db.insertInto("user_devices").values(userDeviceToRow(device)).execute());
    },
    async findById(id) {
      const row = await run.read((db) =>
        db.selectFrom("user_devices").selectAll().where("id", "=", id).executeTakeFirst(),
      );
      return row ? rowToUserDevice(row) : null;
    },
    async listByUser(userId) {
      const rows = await run.read((db) =>
        db
          .selectFrom("user_devices")
          .selectAll()
          .where("user_id", "=", userId)
          .orderBy("created_at")
          .orderBy("id")
          .execute(),
      );
      return rows.map(rowToUserDevice);
    },
    async deleteById(id) {
      const row = await run.write((db) =>
        db.deleteFrom("user_devices").where("id", "=", id).returningAll().executeTakeFirst(),
      );
      return row ? rowToUserDevice(row) : null;
    },
    async delete(userId, id) {
      const result = await run.write((db) =>
        db.deleteFrom("user_devices").where("user_id", "=", userId).where("id", "=", id).executeTakeFirst(),
      );
      return result.numDeletedRows > 0n;
    },
    async touchLastUsed(id, at) {
      await run.write((db) =>
        db
          .updateTable("user_devices")
          .set({ last_used_at: fromDate(at) })
          .where("id", "=", id)
          .execute(),
      );
    },
  };
}

export function createCliLoginRepository(run: QueryRunner): CliLoginRepository {
  return {
    async insert(login) {
      await run.write((db) => db.insertInto("cli_logins").values(cliLoginToRow(login)).execute());
    },
    async findById(id) {
      const row = await run.read((db) =>
        db.selectFrom("cli_logins").selectAll().where("id", "=", id).executeTakeFirst(),
      );
      return row ? rowToCliLogin(row) : null;
    },
    async findByCode(codeHash) {
      const row = await run.read((db) =>
        db.selectFrom("cli_logins").selectAll().where("code_hash", "=", codeHash).executeTakeFirst(),
      );
      return row ? rowToCliLogin(row) : null;
    },
    async countPendingFrom(ipAddress, at) {
      const row = await run.read((db) =>
        db
          .selectFrom("cli_logins")
          .select((eb) => eb.fn.countAll<string | number>().as("n"))
          .where("ip_address", "=", ipAddress)
          .where("expires_at", ">", fromDate(at))
          .where("approved_at", "is", null)
          .where("denied_at", "is", null)
          .executeTakeFirstOrThrow(),
      );
      return Number(row.n);
    },
    async approve(id, userId, at) {
      const row = await run.write((db) =>
        db
          .updateTable("cli_logins")
          .set({ approved_by: userId, approved_at: fromDate(at) })
          .where("id", "=", id)
          .where("approved_at", "is", null)
          .where("denied_at", "is", null)
          .where("expires_at", ">", fromDate(at))
          .returningAll()
          .executeTakeFirst(),
      );
      return row ? rowToCliLogin(row) : null;
    },
    async deny(id, at) {
      const row = await run.write((db) =>
        db
          .updateTable("cli_logins")
          .set({ denied_at: fromDate(at) })
          .where("id", "=", id)
          .where("approved_at", "is", null)
          .where("denied_at", "is", null)
          .returningAll()
          .executeTakeFirst(),
      );
      return row ? rowToCliLogin(row) : null;
    },
    async recordCodeFailure(id) {
      const row = await run.write((db) =>
        db
          .updateTable("cli_logins")
          .set((eb) => ({ code_failures: eb("code_failures", "+", 1) }))
          .where("id", "=", id)
          .returning("code_failures")
          .executeTakeFirst(),
      );
      return row ? Number(row.code_failures) : 0;
    },
    async delete(id) {
      await run.write((db) => db.deleteFrom("cli_logins").where("id", "=", id).execute());
    },
    async deleteExpired(before) {
      await run.write((db) =>
        db.deleteFrom("cli_logins").where("expires_at", "<", fromDate(before)).execute(),
      );
    },
  };
}
