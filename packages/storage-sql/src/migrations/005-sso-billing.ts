/**
 * 005_sso_billing: each workspace's OIDC and SAML identity provider, the single-use state of
 * sign-ins in flight, and the billing account a provider keeps for a workspace. Frozen once
 * released.
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

export function ssoBillingMigration(dialect: SqlDialectName): Migration {
  const t = types[dialect];
  const text = (table: Table, name: string, nullable = false) =>
    table.addColumn(name, "text", (col) => (nullable ? col : col.notNull()));
  const millis = (table: Table, name: string, nullable = false) =>
    table.addColumn(name, t.bigint, (col) => (nullable ? col : col.notNull()));
  const flag = (table: Table, name: string) =>
    table.addColumn(name, t.flag, (col) => col.notNull().check(sql`${sql.ref(name)} in (0, 1)`));
  /** One row per workspace, gone with it. */
  const workspaceKey = (table: Table) =>
    table.addColumn("workspace_id", "text", (col) =>
      col.notNull().references("workspaces.id").onDelete("cascade"),
    );

  return {
    async up(db: Kysely<unknown>): Promise<void> {
      let oidc: Table = db.schema.createTable("oidc_providers");
      oidc = text(oidc, "id").addPrimaryKeyConstraint("oidc_providers_pkey", ["id"]);
      oidc = workspaceKey(oidc);
      for (const name of ["name", "issuer_url", "client_id"]) oidc = text(oidc, name);
      oidc = oidc.addColumn("sealed_client_secret", t.bytes);
      for (const name of ["scopes", "email_claim", "name_claim", "username_claim", "picture_claim"]) {
        oidc = text(oidc, name);
      }
      for (const name of ["enforce_sso", "allow_jit_provisioning", "use_pkce", "is_active"]) {
        oidc = flag(oidc, name);
      }
      oidc = millis(oidc, "created_at");
      oidc = millis(oidc, "updated_at");
      await oidc.addUniqueConstraint("oidc_providers_workspace_key", ["workspace_id"]).execute();

      let saml: Table = db.schema.createTable("saml_providers");
      saml = text(saml, "id").addPrimaryKeyConstraint("saml_providers_pkey", ["id"]);
      saml = workspaceKey(saml);
      for (const name of [
        "name",
        "metadata_url",
        "email_attribute",
        "name_attribute",
        "username_attribute",
        "picture_attribute",
      ]) {
        saml = text(saml, name);
      }
      for (const name of ["enforce_sso", "allow_jit_provisioning", "is_active"]) saml = flag(saml, name);
      // The IdP's metadata as last fetched (JSON), and when; null until the first sign-in.
      saml = text(saml, "idp_metadata", true);
      saml = millis(saml, "created_at");
      saml = millis(saml, "updated_at");
      await saml.addUniqueConstraint("saml_providers_workspace_key", ["workspace_id"]).execute();

      let states: Table = db.schema.createTable("sso_login_states");
      states = text(states, "id").addPrimaryKeyConstraint("sso_login_states_pkey", ["id"]);
      states = workspaceKey(states);
      states = text(states, "protocol");
      states = text(states, "data");
      states = millis(states, "created_at");
      states = millis(states, "expires_at");
      await states.execute();
      // Pruning: anyone can start a sign-in, so expired states are deleted in bulk.
      await db.schema
        .createIndex("sso_login_states_expiry_idx")
        .on("sso_login_states")
        .column("expires_at")
        .execute();

      let billing: Table = db.schema.createTable("billing_accounts");
      billing = billing.addColumn("workspace_id", "text", (col) =>
        col.primaryKey().references("workspaces.id").onDelete("cascade"),
      );
      for (const name of [
        "provider",
        "customer_id",
        "subscription_id",
        "product_id",
        "product_name",
        "status",
      ]) {
        billing = text(billing, name);
      }
      billing = flag(billing, "cancel_at_period_end");
      billing = millis(billing, "current_period_end", true);
      billing = text(billing, "metadata");
      billing = millis(billing, "state_at");
      billing = millis(billing, "created_at");
      billing = millis(billing, "updated_at");
      await billing
        .addUniqueConstraint("billing_accounts_customer_key", ["provider", "customer_id"])
        .execute();
    },
  };
}
