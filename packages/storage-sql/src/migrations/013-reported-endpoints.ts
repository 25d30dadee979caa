/**
 * 013_reported_endpoints: what a target's daemon reports that differs from the target's
 * endpoints, waiting for an administrator's approval (a JSON array, empty when nothing waits).
 * Host certificates name only approved endpoints. Frozen once released.
 *
 * @module
 */
import type { Kysely, Migration } from "kysely";

export function reportedEndpointsMigration(): Migration {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .alterTable("targets")
        .addColumn("reported_endpoints", "text", (col) => col.notNull().defaultTo("[]"))
        .execute();
    },
  };
}
