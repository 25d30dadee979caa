/**
 * 015_grant_kinds: a grant of a principal has a kind. Standing grants (every grant before this
 * migration) let their subject in until removed; time-bound grants until `valid_until`; on-request
 * grants only during an approved access request, under the approval policy stored with them
 * (JSON: maximum duration, approver roles and teams, approvals needed, whether a reason is
 * required). Frozen once released.
 *
 * @module
 */
import { type Kysely, type Migration, sql } from "kysely";
import type { SqlDialectName } from "../dialect.js";

const types = {
  sqlite: { bigint: "integer" },
  postgres: { bigint: "bigint" },
} as const;

export function grantKindsMigration(dialect: SqlDialectName): Migration {
  const t = types[dialect];
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      const grants = () => db.schema.alterTable("principal_subjects");
      await grants()
        // 'standing', 'time_bound' or 'on_request', checked by the core (no CHECK: SQLite could not
        // drop the column again in a test that rebuilds an older schema).
        .addColumn("grant_kind", "text", (col) => col.notNull().defaultTo("standing"))
        .execute();
      await grants().addColumn("valid_until", t.bigint).execute();
      await grants().addColumn("approval_policy", "text").execute();
      // The sweep of lapsed time-bound grants starts from their end.
      await db.schema
        .createIndex("principal_subjects_valid_until_idx")
        .on("principal_subjects")
        .column("valid_until")
        .where(sql.ref("valid_until"), "is not", null)
        .execute();
    },
  };
}
