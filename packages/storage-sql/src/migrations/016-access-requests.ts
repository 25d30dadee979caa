/**
 * 016_access_requests: requests for just-in-time access to a target's login. Each row holds the
 * approval policy of the grant it was made under (JSON) and its transitions (JSON, oldest first);
 * `version` lets concurrent decisions detect each other. A request goes with its target and with
 * its requester's membership. Frozen once released.
 *
 * @module
 */
import type { CreateTableBuilder, Kysely, Migration } from "kysely";
import type { SqlDialectName } from "../dialect.js";

const types = {
  sqlite: { bigint: "integer" },
  postgres: { bigint: "bigint" },
} as const;

type Table = CreateTableBuilder<string, string>;

export function accessRequestsMigration(dialect: SqlDialectName): Migration {
  const t = types[dialect];
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      const text = (table: Table, name: string) => table.addColumn(name, "text", (col) => col.notNull());
      const millis = (table: Table, name: string, nullable = false) =>
        table.addColumn(name, t.bigint, (col) => (nullable ? col : col.notNull()));
      let requests: Table = db.schema
        .createTable("access_requests")
        .addColumn("id", "text", (col) => col.primaryKey())
        .addColumn("workspace_id", "text", (col) =>
          col.notNull().references("workspaces.id").onDelete("cascade"),
        );
      for (const column of ["target_id", "login", "requester_id", "reason", "state", "policy", "events"]) {
        requests = text(requests, column);
      }
      requests = millis(requests, "duration_seconds");
      requests = millis(requests, "created_at");
      requests = millis(requests, "decide_by");
      requests = millis(requests, "approved_at", true);
      requests = millis(requests, "ends_at", true);
      requests = requests.addColumn("version", "integer", (col) => col.notNull());
      requests = requests
        .addForeignKeyConstraint(
          "access_requests_target_fkey",
          ["workspace_id", "target_id"],
          "targets",
          ["workspace_id", "id"],
          (fk) => fk.onDelete("cascade"),
        )
        .addForeignKeyConstraint(
          "access_requests_requester_fkey",
          ["workspace_id", "requester_id"],
          "workspace_members",
          ["workspace_id", "user_id"],
          (fk) => fk.onDelete("cascade"),
        );
      await requests.execute();
      await db.schema
        .createIndex("access_requests_workspace_created_idx")
        .on("access_requests")
        .columns(["workspace_id", "created_at"])
        .execute();
      // The principal maps read a target's approved requests; the sweep reads what is due.
      await db.schema
        .createIndex("access_requests_target_state_idx")
        .on("access_requests")
        .columns(["workspace_id", "target_id", "state"])
        .execute();
      await db.schema
        .createIndex("access_requests_state_idx")
        .on("access_requests")
        .columns(["state"])
        .execute();
    },
  };
}
