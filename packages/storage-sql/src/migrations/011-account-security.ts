/**
 * 011_account_security: usernames unique whatever their case, what a pending CLI login needs
 * for its approval page (the user code, its wrong tries, a refusal, the client's platform and
 * version), and the indexes behind the per-address and per-workspace limits. Frozen once
 * released.
 *
 * Usernames are names in certificates and on screens, where `Ada` and `ada` read as one person,
 * so at most one account may hold each spelling. A database that already has two accounts whose
 * usernames differ only in case cannot get that rule by itself: the migration stops and names
 * them, and an operator renames one (the SQL is in the message) before starting again.
 *
 * @module
 */
import { type Kysely, type Migration, sql } from "kysely";
import type { SqlDialectName } from "../dialect.js";

const types = {
  sqlite: { bigint: "integer" },
  postgres: { bigint: "bigint" },
} as const;

/** Two or more accounts whose usernames differ only in case; the migration cannot go on. */
export class UsernameCaseClashError extends Error {
  override readonly name = "UsernameCaseClashError";
  constructor(readonly clashes: ReadonlyArray<{ readonly id: string; readonly username: string }>) {
    const listed = clashes.map((c) => `${c.username} (user ${c.id})`).join(", ");
    super(
      `usernames must now be unique whatever their case, and these accounts share one: ${listed}. ` +
        `Rename all but one of each group, e.g. UPDATE users SET username = '<new name>' WHERE id = '<user id>'; ` +
        `then start the server again.`,
    );
  }
}

export function accountSecurityMigration(dialect: SqlDialectName): Migration {
  const t = types[dialect];
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      const clashes = await sql<{ id: string; username: string }>`
        select id, username from users
        where lower(username) in (select lower(username) from users group by lower(username) having count(*) > 1)
        order by lower(username), id`.execute(db);
      if (clashes.rows.length > 0) throw new UsernameCaseClashError(clashes.rows);
      await db.schema
        .createIndex("users_username_lower_key")
        .on("users")
        .unique()
        .expression(sql`lower(username)`)
        .execute();

      const logins = () => db.schema.alterTable("cli_logins");
      // Logins pending before this migration have no user code and cannot be approved: they expire.
      await logins()
        .addColumn("user_code_hash", "text", (col) => col.notNull().defaultTo(""))
        .execute();
      await logins()
        .addColumn("code_failures", "integer", (col) => col.notNull().defaultTo(0))
        .execute();
      await logins().addColumn("denied_at", t.bigint).execute();
      await logins()
        .addColumn("client_os", "text", (col) => col.notNull().defaultTo(""))
        .execute();
      await logins()
        .addColumn("client_version", "text", (col) => col.notNull().defaultTo(""))
        .execute();
      // The workspace quota on open terminal sessions counts them per workspace.
      await db.schema
        .createIndex("daemon_sessions_workspace_state_idx")
        .on("daemon_sessions")
        .columns(["workspace_id", "state"])
        .execute();
      // The cap on pending logins per client address.
      await db.schema
        .createIndex("cli_logins_address_idx")
        .on("cli_logins")
        .columns(["ip_address", "expires_at"])
        .execute();
    },
  };
}
