/**
 * 012_whole_second_durations: durations are stored in whole seconds. Earlier releases accepted a
 * fraction of a second in a certificate authority's lifetime and TTLs and wrote it as is; SQLite
 * kept it (a REAL in an INTEGER column), which every later read refused. Such values are cut to
 * their whole seconds (toward zero: never longer than what was asked for). PostgreSQL's bigint
 * columns never held a fraction. Frozen once released.
 *
 * @module
 */
import { type Kysely, type Migration, sql } from "kysely";
import type { SqlDialectName } from "../dialect.js";

const durationColumns: Readonly<Record<string, readonly string[]>> = {
  certificate_authorities: [
    "lifetime_seconds",
    "user_default_ttl_seconds",
    "user_max_ttl_seconds",
    "host_default_ttl_seconds",
    "host_max_ttl_seconds",
  ],
  workspace_settings: ["enroll_expiry_seconds", "invite_expiry_seconds"],
};

export function wholeSecondDurationsMigration(dialect: SqlDialectName): Migration {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      if (dialect !== "sqlite") return;
      for (const [table, columns] of Object.entries(durationColumns)) {
        for (const column of columns) {
          await sql`update ${sql.table(table)} set ${sql.ref(column)} = cast(${sql.ref(column)} as integer) where typeof(${sql.ref(column)}) = 'real'`.execute(
            db,
          );
        }
      }
    },
  };
}
