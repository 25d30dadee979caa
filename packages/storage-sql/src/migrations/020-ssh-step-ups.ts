/**
 * 020_ssh_step_ups: passkey step-ups of SSH logins (the user, the logins listed as JSON, the
 * WebAuthn challenge, when it was completed and with which passkey) and the logins a certificate
 * has been signed for under each (one each: the primary key). The ledger names the step-up each
 * certificate was signed under. Everything goes with the workspace and the user. Frozen once
 * released.
 *
 * @module
 */
import type { Kysely, Migration } from "kysely";
import type { SqlDialectName } from "../dialect.js";

export function sshStepUpsMigration(dialect: SqlDialectName): Migration {
  const bigint = dialect === "postgres" ? "bigint" : "integer";
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable("ssh_step_ups")
        .addColumn("id", "text", (col) => col.primaryKey())
        .addColumn("workspace_id", "text", (col) =>
          col.notNull().references("workspaces.id").onDelete("cascade"),
        )
        .addColumn("user_id", "text", (col) => col.notNull().references("users.id").onDelete("cascade"))
        .addColumn("targets", "text", (col) => col.notNull())
        .addColumn("challenge", "text", (col) => col.notNull())
        .addColumn("created_at", bigint, (col) => col.notNull())
        .addColumn("expires_at", bigint, (col) => col.notNull())
        .addColumn("completed_at", bigint)
        .addColumn("passkey_id", "text")
        .execute();
      await db.schema
        .createIndex("ssh_step_ups_expires_idx")
        .on("ssh_step_ups")
        .column("expires_at")
        .execute();
      await db.schema
        .createTable("ssh_step_up_certificates")
        .addColumn("step_up_id", "text", (col) =>
          col.notNull().references("ssh_step_ups.id").onDelete("cascade"),
        )
        .addColumn("target_id", "text", (col) => col.notNull())
        .addColumn("login", "text", (col) => col.notNull())
        .addColumn("certificate_id", "text", (col) => col.notNull())
        .addPrimaryKeyConstraint("ssh_step_up_certificates_pkey", ["step_up_id", "target_id", "login"])
        .execute();
      await db.schema.alterTable("issued_certificates").addColumn("step_up_id", "text").execute();
    },
  };
}
