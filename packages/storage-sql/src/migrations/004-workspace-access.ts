/**
 * 004_workspace_access: workspace settings, the invite link, domain claims, teams and their
 * members, principals and their grants. Frozen once released.
 *
 * Referential integrity does the bookkeeping: a team member must be a workspace member, and a grant
 * names a member, a team or a service account of the same workspace (composite foreign keys on
 * `(workspace_id, id)`). So removing a member, deleting a team, a service account, a target or the
 * workspace removes the memberships and grants that hang on it, in the same statement.
 *
 * @module
 */
import { type CreateTableBuilder, type Kysely, type Migration, sql } from "kysely";
import type { SqlDialectName } from "../dialect.js";

/** Fixed here, like 001's, so this migration never changes when a later one does. */
const types = {
  sqlite: { bigint: "integer" },
  postgres: { bigint: "bigint" },
} as const;

type Table = CreateTableBuilder<string, string>;

export function workspaceAccessMigration(dialect: SqlDialectName): Migration {
  const t = types[dialect];
  const text = (table: Table, name: string, nullable = false) =>
    table.addColumn(name, "text", (col) => (nullable ? col : col.notNull()));
  const millis = (table: Table, name: string, nullable = false) =>
    table.addColumn(name, t.bigint, (col) => (nullable ? col : col.notNull()));
  const workspace = (table: Table) =>
    table.addColumn("workspace_id", "text", (col) =>
      col.notNull().references("workspaces.id").onDelete("cascade"),
    );
  /** A composite key to a row of the same workspace; goes with it. */
  const sameWorkspace = (table: Table, name: string, column: string, target: string, targetColumn: string) =>
    table.addForeignKeyConstraint(
      name,
      ["workspace_id", column],
      target,
      ["workspace_id", targetColumn],
      (fk) => fk.onDelete("cascade"),
    );

  return {
    async up(db: Kysely<unknown>): Promise<void> {
      // Targets for composite keys of principals, service accounts for grants: (workspace_id, id)
      // is unique because id is, the index only lets foreign keys name the pair.
      for (const table of ["service_accounts", "targets"]) {
        await db.schema
          .createIndex(`${table}_workspace_id_key`)
          .unique()
          .on(table)
          .columns(["workspace_id", "id"])
          .execute();
      }

      let settings: Table = db.schema.createTable("workspace_settings");
      settings = settings.addColumn("workspace_id", "text", (col) =>
        col.primaryKey().references("workspaces.id").onDelete("cascade"),
      );
      settings = millis(settings, "enroll_expiry_seconds");
      settings = millis(settings, "invite_expiry_seconds");
      settings = millis(settings, "updated_at");
      await settings.execute();

      let invites: Table = db.schema.createTable("workspace_invites");
      invites = invites.addColumn("workspace_id", "text", (col) =>
        col.primaryKey().references("workspaces.id").onDelete("cascade"),
      );
      for (const name of ["token_hash", "role", "created_by"]) invites = text(invites, name);
      invites = millis(invites, "created_at");
      invites = millis(invites, "expires_at");
      await invites.addUniqueConstraint("workspace_invites_token_hash_key", ["token_hash"]).execute();

      let domains: Table = db.schema.createTable("workspace_domains");
      domains = workspace(domains);
      domains = text(domains, "domain");
      domains = text(domains, "verification_token");
      domains = millis(domains, "verified_at", true);
      domains = millis(domains, "created_at");
      domains = millis(domains, "updated_at");
      await domains.addPrimaryKeyConstraint("workspace_domains_pkey", ["workspace_id", "domain"]).execute();
      // Many workspaces may claim a domain; only one can prove it.
      await db.schema
        .createIndex("workspace_domains_verified_idx")
        .unique()
        .on("workspace_domains")
        .column("domain")
        .where(sql<boolean>`verified_at is not null`)
        .execute();

      let teams: Table = db.schema.createTable("teams");
      teams = text(teams, "id").addPrimaryKeyConstraint("teams_pkey", ["id"]);
      teams = workspace(teams);
      for (const name of ["name", "name_folded", "description", "description_folded", "tags"]) {
        teams = text(teams, name);
      }
      teams = millis(teams, "created_at");
      teams = millis(teams, "updated_at");
      await teams
        .addUniqueConstraint("teams_workspace_name_key", ["workspace_id", "name"])
        .addUniqueConstraint("teams_workspace_id_key", ["workspace_id", "id"])
        .execute();

      let teamMembers: Table = db.schema.createTable("team_members");
      teamMembers = text(teamMembers, "workspace_id");
      teamMembers = text(teamMembers, "team_id");
      teamMembers = text(teamMembers, "user_id");
      teamMembers = millis(teamMembers, "created_at");
      teamMembers = sameWorkspace(teamMembers, "team_members_team_fkey", "team_id", "teams", "id");
      teamMembers = sameWorkspace(
        teamMembers,
        "team_members_member_fkey",
        "user_id",
        "workspace_members",
        "user_id",
      );
      await teamMembers.addPrimaryKeyConstraint("team_members_pkey", ["team_id", "user_id"]).execute();
      // teamsOf, and the cascade when a member leaves.
      await db.schema
        .createIndex("team_members_member_idx")
        .on("team_members")
        .columns(["workspace_id", "user_id"])
        .execute();

      let principals: Table = db.schema.createTable("principals");
      principals = text(principals, "id").addPrimaryKeyConstraint("principals_pkey", ["id"]);
      principals = text(principals, "workspace_id");
      principals = text(principals, "target_id");
      principals = text(principals, "username");
      principals = millis(principals, "created_at");
      principals = sameWorkspace(principals, "principals_target_fkey", "target_id", "targets", "id");
      await principals
        .addUniqueConstraint("principals_target_username_key", ["target_id", "username"])
        .addUniqueConstraint("principals_workspace_id_key", ["workspace_id", "id"])
        .execute();
      await db.schema
        .createIndex("principals_workspace_username_idx")
        .on("principals")
        .columns(["workspace_id", "username"])
        .execute();

      // One row per grant; exactly one of the subject columns is set, the others are null (and a
      // composite key with a null column is not checked, so each row checks only its subject).
      let grants: Table = db.schema.createTable("principal_subjects");
      grants = text(grants, "workspace_id");
      grants = text(grants, "principal_id");
      grants = grants.addColumn("subject_type", "text", (col) =>
        col.notNull().check(sql`subject_type in ('user', 'team', 'service_account')`),
      );
      grants = text(grants, "user_id", true);
      grants = text(grants, "team_id", true);
      grants = text(grants, "service_account_id", true);
      grants = millis(grants, "created_at");
      grants = grants.addCheckConstraint(
        "principal_subjects_one_subject_check",
        sql`(subject_type = 'user' and user_id is not null and team_id is null and service_account_id is null)
          or (subject_type = 'team' and team_id is not null and user_id is null and service_account_id is null)
          or (subject_type = 'service_account' and service_account_id is not null and user_id is null and team_id is null)`,
      );
      grants = sameWorkspace(grants, "principal_subjects_principal_fkey", "principal_id", "principals", "id");
      grants = sameWorkspace(
        grants,
        "principal_subjects_member_fkey",
        "user_id",
        "workspace_members",
        "user_id",
      );
      grants = sameWorkspace(grants, "principal_subjects_team_fkey", "team_id", "teams", "id");
      grants = sameWorkspace(
        grants,
        "principal_subjects_service_account_fkey",
        "service_account_id",
        "service_accounts",
        "id",
      );
      await grants.execute();
      for (const column of ["user_id", "team_id", "service_account_id"]) {
        const name = column.replace(/_id$/, "");
        await db.schema
          .createIndex(`principal_subjects_principal_${name}_key`)
          .unique()
          .on("principal_subjects")
          .columns(["principal_id", column])
          .execute();
        // Access lookups and RevokeAllAccess start from the subject; so do the cascades.
        await db.schema
          .createIndex(`principal_subjects_${name}_idx`)
          .on("principal_subjects")
          .columns(["workspace_id", column])
          .execute();
      }
    },
  };
}
