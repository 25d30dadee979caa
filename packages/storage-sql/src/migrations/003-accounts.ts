/**
 * 003_accounts: one-time tokens, passkeys, backup codes, CLI devices and pending CLI logins,
 * linked identities, sign-in throttles and request nonces. Frozen once released.
 *
 * @module
 */
import { type CreateTableBuilder, type Kysely, type Migration, sql } from "kysely";
import type { SqlDialectName } from "../dialect.js";

/** Fixed here, like 001's, so this migration never changes when a later one does. */
const types = {
  sqlite: { bigint: "integer", flag: "integer", bytes: "blob" },
  postgres: { bigint: "bigint", flag: "smallint", bytes: "bytea" },
} as const;

type Table = CreateTableBuilder<string, string>;

export function accountsMigration(dialect: SqlDialectName): Migration {
  const t = types[dialect];
  const text = (table: Table, name: string, nullable = false) =>
    table.addColumn(name, "text", (col) => (nullable ? col : col.notNull()));
  const millis = (table: Table, name: string, nullable = false) =>
    table.addColumn(name, t.bigint, (col) => (nullable ? col : col.notNull()));
  const userFk = (table: Table, name: string, nullable = false) =>
    table.addColumn(name, "text", (col) => {
      const ref = col.references("users.id").onDelete("cascade");
      return nullable ? ref : ref.notNull();
    });

  return {
    async up(db: Kysely<unknown>): Promise<void> {
      let tokens: Table = db.schema.createTable("one_time_tokens");
      tokens = text(tokens, "id").addPrimaryKeyConstraint("one_time_tokens_pkey", ["id"]);
      tokens = text(tokens, "purpose");
      tokens = text(tokens, "token_hash");
      tokens = userFk(tokens, "user_id", true);
      tokens = text(tokens, "data");
      tokens = millis(tokens, "created_at");
      tokens = millis(tokens, "expires_at");
      tokens = millis(tokens, "consumed_at", true);
      await tokens.addUniqueConstraint("one_time_tokens_token_hash_key", ["token_hash"]).execute();
      await db.schema
        .createIndex("one_time_tokens_user_purpose_idx")
        .on("one_time_tokens")
        .columns(["user_id", "purpose", "created_at"])
        .execute();
      // Pruning expired sign-in challenges, which anyone can create.
      await db.schema
        .createIndex("one_time_tokens_purpose_expiry_idx")
        .on("one_time_tokens")
        .columns(["purpose", "expires_at"])
        .execute();

      let passkeys: Table = db.schema.createTable("passkeys");
      passkeys = text(passkeys, "id").addPrimaryKeyConstraint("passkeys_pkey", ["id"]);
      passkeys = userFk(passkeys, "user_id");
      passkeys = text(passkeys, "name");
      passkeys = passkeys.addColumn("public_key", t.bytes, (col) => col.notNull());
      passkeys = millis(passkeys, "counter");
      passkeys = text(passkeys, "transports");
      passkeys = text(passkeys, "device_type");
      passkeys = passkeys.addColumn("backed_up", t.flag, (col) =>
        col.notNull().check(sql`backed_up in (0, 1)`),
      );
      passkeys = millis(passkeys, "created_at");
      passkeys = millis(passkeys, "last_used_at", true);
      await passkeys.execute();
      await db.schema.createIndex("passkeys_user_idx").on("passkeys").column("user_id").execute();

      let codes: Table = db.schema.createTable("backup_codes");
      codes = text(codes, "id").addPrimaryKeyConstraint("backup_codes_pkey", ["id"]);
      codes = userFk(codes, "user_id");
      codes = text(codes, "code_hash");
      codes = millis(codes, "created_at");
      codes = millis(codes, "used_at", true);
      await codes.execute();
      await db.schema
        .createIndex("backup_codes_user_hash_idx")
        .on("backup_codes")
        .columns(["user_id", "code_hash"])
        .execute();

      let devices: Table = db.schema.createTable("user_devices");
      devices = text(devices, "id").addPrimaryKeyConstraint("user_devices_pkey", ["id"]);
      devices = userFk(devices, "user_id");
      devices = devices.addColumn("session_id", "text", (col) =>
        col.notNull().references("auth_sessions.id").onDelete("cascade"),
      );
      for (const name of ["name", "auth_method", "public_key"]) devices = text(devices, name);
      devices = millis(devices, "created_at");
      devices = millis(devices, "expires_at");
      devices = millis(devices, "last_used_at", true);
      await devices.execute();
      await db.schema.createIndex("user_devices_user_idx").on("user_devices").column("user_id").execute();
      await db.schema
        .createIndex("user_devices_session_idx")
        .on("user_devices")
        .column("session_id")
        .execute();

      let logins: Table = db.schema.createTable("cli_logins");
      logins = text(logins, "id").addPrimaryKeyConstraint("cli_logins_pkey", ["id"]);
      for (const name of [
        "code_hash",
        "device_id",
        "device_name",
        "auth_method",
        "public_key",
        "ip_address",
        "user_agent",
      ]) {
        logins = text(logins, name);
      }
      logins = millis(logins, "created_at");
      logins = millis(logins, "expires_at");
      logins = userFk(logins, "approved_by", true);
      logins = millis(logins, "approved_at", true);
      await logins.addUniqueConstraint("cli_logins_code_hash_key", ["code_hash"]).execute();
      await db.schema.createIndex("cli_logins_expiry_idx").on("cli_logins").column("expires_at").execute();

      let linked: Table = db.schema.createTable("linked_accounts");
      linked = userFk(linked, "user_id");
      for (const name of ["provider", "provider_id", "provider_email", "provider_username", "protocol"]) {
        linked = text(linked, name);
      }
      linked = millis(linked, "created_at");
      await linked
        .addPrimaryKeyConstraint("linked_accounts_pkey", ["user_id", "provider"])
        .addUniqueConstraint("linked_accounts_provider_id_key", ["provider", "provider_id"])
        .execute();

      let throttles: Table = db.schema.createTable("login_throttles");
      throttles = text(throttles, "key").addPrimaryKeyConstraint("login_throttles_pkey", ["key"]);
      throttles = throttles.addColumn("failures", "integer", (col) => col.notNull());
      throttles = millis(throttles, "last_failure_at");
      throttles = millis(throttles, "previous_failure_at", true);
      await throttles.execute();

      let nonces: Table = db.schema.createTable("request_nonces");
      nonces = text(nonces, "signer");
      nonces = text(nonces, "nonce");
      nonces = millis(nonces, "expires_at");
      await nonces.addPrimaryKeyConstraint("request_nonces_pkey", ["signer", "nonce"]).execute();
      await db.schema
        .createIndex("request_nonces_expiry_idx")
        .on("request_nonces")
        .column("expires_at")
        .execute();
    },
  };
}
