/**
 * 001_initial: every table of the first release. Frozen once released: change the schema with a
 * new migration, never by editing this one.
 *
 * @module
 */
import {
  type ColumnDefinitionBuilder,
  type CreateTableBuilder,
  type Kysely,
  type Migration,
  sql,
} from "kysely";
import type { SqlDialectName } from "../dialect.js";

/** The column types that differ between the dialects; fixed here so this migration never changes. */
const types = {
  sqlite: { bigint: "integer", flag: "integer", bytes: "blob" },
  postgres: { bigint: "bigint", flag: "smallint", bytes: "bytea" },
} as const;

type Table = CreateTableBuilder<string, string>;

export function initialMigration(dialect: SqlDialectName): Migration {
  const t = types[dialect];

  // Shared column shapes. `check` keeps flags to 0/1 so `= 1` in the partial index is the whole truth.
  const flag = (table: Table, name: string) =>
    table.addColumn(name, t.flag, (col) => col.notNull().check(sql`${sql.ref(name)} in (0, 1)`));
  const millis = (table: Table, name: string, nullable = false) =>
    table.addColumn(name, t.bigint, (col) => (nullable ? col : col.notNull()));
  const text = (table: Table, name: string, nullable = false) =>
    table.addColumn(name, "text", (col) => (nullable ? col : col.notNull()));
  const workspaceFk = (col: ColumnDefinitionBuilder) =>
    col.notNull().references("workspaces.id").onDelete("cascade");

  return {
    async up(db: Kysely<unknown>): Promise<void> {
      let users: Table = db.schema.createTable("users");
      users = text(users, "id").addPrimaryKeyConstraint("users_pkey", ["id"]);
      users = text(users, "name");
      users = text(users, "username");
      users = text(users, "email");
      users = flag(users, "email_verified");
      users = text(users, "picture");
      users = text(users, "password_hash", true);
      users = flag(users, "enable_email_recovery");
      users = millis(users, "created_at");
      users = millis(users, "updated_at");
      await users
        .addUniqueConstraint("users_email_key", ["email"])
        .addUniqueConstraint("users_username_key", ["username"])
        .execute();

      let sessions: Table = db.schema.createTable("auth_sessions");
      sessions = text(sessions, "id").addPrimaryKeyConstraint("auth_sessions_pkey", ["id"]);
      sessions = sessions.addColumn("user_id", "text", (col) =>
        col.notNull().references("users.id").onDelete("cascade"),
      );
      sessions = millis(sessions, "created_at");
      sessions = millis(sessions, "expires_at");
      sessions = millis(sessions, "revoked_at", true);
      sessions = text(sessions, "ip_address");
      sessions = text(sessions, "user_agent");
      await sessions.execute();
      await db.schema.createIndex("auth_sessions_user_idx").on("auth_sessions").column("user_id").execute();

      let tokens: Table = db.schema.createTable("refresh_tokens");
      tokens = text(tokens, "id").addPrimaryKeyConstraint("refresh_tokens_pkey", ["id"]);
      tokens = tokens.addColumn("session_id", "text", (col) =>
        col.notNull().references("auth_sessions.id").onDelete("cascade"),
      );
      tokens = text(tokens, "token_hash");
      tokens = millis(tokens, "created_at");
      tokens = millis(tokens, "expires_at");
      tokens = millis(tokens, "rotated_at", true);
      await tokens.addUniqueConstraint("refresh_tokens_token_hash_key", ["token_hash"]).execute();
      await db.schema
        .createIndex("refresh_tokens_session_idx")
        .on("refresh_tokens")
        .column("session_id")
        .execute();

      let workspaces: Table = db.schema.createTable("workspaces");
      workspaces = text(workspaces, "id").addPrimaryKeyConstraint("workspaces_pkey", ["id"]);
      workspaces = text(workspaces, "name");
      workspaces = text(workspaces, "description");
      workspaces = text(workspaces, "created_by");
      workspaces = flag(workspaces, "enroll_auto_approve");
      workspaces = millis(workspaces, "enroll_expires_at", true);
      workspaces = millis(workspaces, "invite_expires_at", true);
      workspaces = millis(workspaces, "created_at");
      workspaces = millis(workspaces, "updated_at");
      await workspaces.execute();

      let members: Table = db.schema
        .createTable("workspace_members")
        .addColumn("workspace_id", "text", workspaceFk)
        .addColumn("user_id", "text", (col) => col.notNull().references("users.id").onDelete("cascade"));
      members = text(members, "role");
      members = millis(members, "created_at");
      members = millis(members, "updated_at");
      await members.addPrimaryKeyConstraint("workspace_members_pkey", ["workspace_id", "user_id"]).execute();
      // listForUser starts from the user.
      await db.schema
        .createIndex("workspace_members_user_idx")
        .on("workspace_members")
        .column("user_id")
        .execute();

      let cas: Table = db.schema.createTable("certificate_authorities");
      cas = text(cas, "id").addPrimaryKeyConstraint("certificate_authorities_pkey", ["id"]);
      cas = cas.addColumn("workspace_id", "text", workspaceFk);
      for (const name of ["name", "description", "authority_type", "key_type"]) cas = text(cas, name);
      cas = cas.addColumn("key_bits", "integer", (col) => col.notNull());
      for (const name of ["certificate", "public_key", "serial_number", "subject"]) cas = text(cas, name);
      cas = millis(cas, "not_before");
      cas = millis(cas, "not_after");
      cas = flag(cas, "is_active");
      cas = flag(cas, "is_default");
      cas = text(cas, "allowed_key_types");
      for (const name of [
        "lifetime_seconds",
        "user_default_ttl_seconds",
        "user_max_ttl_seconds",
        "host_default_ttl_seconds",
        "host_max_ttl_seconds",
      ]) {
        cas = cas.addColumn(name, t.bigint, (col) => col.notNull());
      }
      cas = text(cas, "user_extensions");
      cas = text(cas, "user_critical_options");
      cas = cas.addColumn("sealed_private_key", t.bytes, (col) => col.notNull());
      cas = cas.addColumn("key_version", "integer", (col) => col.notNull());
      cas = millis(cas, "created_at");
      cas = millis(cas, "updated_at");
      await cas
        .addUniqueConstraint("certificate_authorities_workspace_name_key", ["workspace_id", "name"])
        .execute();
      // At most one default per workspace and kind; clearDefault + set runs in one transaction.
      await db.schema
        .createIndex("certificate_authorities_one_default_idx")
        .unique()
        .on("certificate_authorities")
        .columns(["workspace_id", "authority_type"])
        .where(sql<boolean>`is_default = 1`)
        .execute();

      let accounts: Table = db.schema.createTable("service_accounts");
      accounts = text(accounts, "id").addPrimaryKeyConstraint("service_accounts_pkey", ["id"]);
      accounts = accounts.addColumn("workspace_id", "text", workspaceFk);
      for (const name of ["name", "name_folded", "description", "description_folded", "role", "tags"]) {
        accounts = text(accounts, name);
      }
      accounts = text(accounts, "token_hash");
      accounts = millis(accounts, "expires_at", true);
      accounts = millis(accounts, "last_used_at", true);
      accounts = millis(accounts, "created_at");
      accounts = millis(accounts, "updated_at");
      await accounts
        .addUniqueConstraint("service_accounts_workspace_name_key", ["workspace_id", "name"])
        .execute();

      let daemons: Table = db.schema.createTable("daemons");
      daemons = text(daemons, "id").addPrimaryKeyConstraint("daemons_pkey", ["id"]);
      daemons = daemons.addColumn("workspace_id", "text", workspaceFk);
      daemons = text(daemons, "target_id", true);
      for (const name of ["name", "name_folded", "status"]) daemons = text(daemons, name);
      daemons = flag(daemons, "record_sessions");
      for (const name of ["metadata", "auth_public_key", "auth_method"]) daemons = text(daemons, name);
      daemons = millis(daemons, "online_since", true);
      daemons = millis(daemons, "created_at");
      daemons = millis(daemons, "updated_at");
      await daemons.execute();
      await db.schema
        .createIndex("daemons_workspace_created_idx")
        .on("daemons")
        .columns(["workspace_id", "created_at"])
        .execute();

      // `seq` orders events appended in the same millisecond: newest first means last appended first.
      let audit: Table = db.schema
        .createTable("audit_events")
        .addColumn("seq", t.bigint, (col) =>
          dialect === "sqlite"
            ? col.primaryKey().autoIncrement()
            : col.primaryKey().generatedByDefaultAsIdentity(),
        );
      audit = text(audit, "id");
      // Null for events outside any workspace; cascades with the workspace otherwise.
      audit = audit.addColumn("workspace_id", "text", (col) =>
        col.references("workspaces.id").onDelete("cascade"),
      );
      for (const name of [
        "actor_id",
        "actor_type",
        "action",
        "resource",
        "ip_address",
        "user_agent",
        "status_code",
        "request_id",
      ]) {
        audit = text(audit, name);
      }
      audit = millis(audit, "occurred_at");
      await audit.addUniqueConstraint("audit_events_id_key", ["id"]).execute();
      await db.schema
        .createIndex("audit_events_workspace_time_idx")
        .on("audit_events")
        .columns(["workspace_id", "occurred_at", "seq"])
        .execute();

      let secrets: Table = db.schema.createTable("secrets");
      secrets = text(secrets, "name").addPrimaryKeyConstraint("secrets_pkey", ["name"]);
      secrets = secrets.addColumn("sealed", t.bytes, (col) => col.notNull());
      secrets = millis(secrets, "created_at");
      await secrets.execute();
    },
  };
}
