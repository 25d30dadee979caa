/**
 * 019_webhooks: a workspace's webhook endpoints (settings, where delivery stands, the lease of the
 * instance delivering), their sealed signing secrets (several during a rotation's overlap) and
 * the recent delivery attempts. Everything goes with the workspace. Frozen once released.
 *
 * @module
 */
import type { CreateTableBuilder, Kysely, Migration } from "kysely";
import type { SqlDialectName } from "../dialect.js";

const types = {
  sqlite: { bigint: "integer", bytes: "blob" },
  postgres: { bigint: "bigint", bytes: "bytea" },
} as const;

type Table = CreateTableBuilder<string, string>;

export function webhooksMigration(dialect: SqlDialectName): Migration {
  const t = types[dialect];
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      const text = (table: Table, name: string) => table.addColumn(name, "text", (col) => col.notNull());
      const bigint = (table: Table, name: string, nullable = false) =>
        table.addColumn(name, t.bigint, (col) => (nullable ? col : col.notNull()));
      const workspace = (table: Table) =>
        table.addColumn("workspace_id", "text", (col) =>
          col.notNull().references("workspaces.id").onDelete("cascade"),
        );

      let endpoints: Table = workspace(
        db.schema.createTable("webhook_endpoints").addColumn("id", "text", (col) => col.primaryKey()),
      );
      for (const column of ["url", "description", "event_types", "disabled_reason", "last_error"]) {
        endpoints = text(endpoints, column);
      }
      endpoints = endpoints.addColumn("enabled", "integer", (col) => col.notNull());
      endpoints = bigint(endpoints, "created_at");
      endpoints = bigint(endpoints, "updated_at");
      endpoints = bigint(endpoints, "cursor");
      endpoints = endpoints.addColumn("attempts", "integer", (col) => col.notNull());
      endpoints = bigint(endpoints, "next_attempt_at", true);
      endpoints = bigint(endpoints, "failing_since", true);
      endpoints = bigint(endpoints, "last_success_at", true);
      endpoints = endpoints.addColumn("lease_owner", "text");
      endpoints = bigint(endpoints, "lease_until", true);
      // Foreign keys of the tables below name the workspace too: no row strays across tenants.
      endpoints = endpoints.addUniqueConstraint("webhook_endpoints_workspace_id_key", ["workspace_id", "id"]);
      await endpoints.execute();
      await db.schema
        .createIndex("webhook_endpoints_workspace_idx")
        .on("webhook_endpoints")
        .columns(["workspace_id", "created_at"])
        .execute();
      // The workers look for enabled endpoints with work.
      await db.schema
        .createIndex("webhook_endpoints_enabled_idx")
        .on("webhook_endpoints")
        .columns(["enabled"])
        .execute();

      let secrets: Table = db.schema.createTable("webhook_secrets");
      secrets = text(secrets, "workspace_id");
      secrets = text(secrets, "endpoint_id");
      secrets = secrets.addColumn("version", "integer", (col) => col.notNull());
      secrets = secrets.addColumn("sealed", t.bytes, (col) => col.notNull());
      secrets = bigint(secrets, "created_at");
      secrets = bigint(secrets, "expires_at", true);
      secrets = secrets
        .addPrimaryKeyConstraint("webhook_secrets_pkey", ["endpoint_id", "version"])
        .addForeignKeyConstraint(
          "webhook_secrets_endpoint_fkey",
          ["workspace_id", "endpoint_id"],
          "webhook_endpoints",
          ["workspace_id", "id"],
          (fk) => fk.onDelete("cascade"),
        );
      await secrets.execute();

      let deliveries: Table = db.schema
        .createTable("webhook_deliveries")
        .addColumn("id", "text", (col) => col.primaryKey());
      for (const column of ["workspace_id", "endpoint_id", "event_id", "event_type", "error"]) {
        deliveries = text(deliveries, column);
      }
      deliveries = bigint(deliveries, "sequence");
      deliveries = deliveries.addColumn("attempt", "integer", (col) => col.notNull());
      deliveries = bigint(deliveries, "attempted_at");
      deliveries = deliveries.addColumn("duration_ms", "integer", (col) => col.notNull());
      deliveries = deliveries.addColumn("succeeded", "integer", (col) => col.notNull());
      deliveries = deliveries.addColumn("http_status", "integer", (col) => col.notNull());
      deliveries = deliveries.addForeignKeyConstraint(
        "webhook_deliveries_endpoint_fkey",
        ["workspace_id", "endpoint_id"],
        "webhook_endpoints",
        ["workspace_id", "id"],
        (fk) => fk.onDelete("cascade"),
      );
      await deliveries.execute();
      await db.schema
        .createIndex("webhook_deliveries_endpoint_idx")
        .on("webhook_deliveries")
        .columns(["endpoint_id", "sequence", "attempt"])
        .execute();
    },
  };
}
