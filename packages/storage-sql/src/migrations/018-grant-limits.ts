/**
 * 018_grant_limits: a grant may carry limits (JSON: source addresses, forwarding, PTY, FIDO
 * requirements, a command allowlist) that the certificates signed under it carry; null is a grant
 * without limits, as every grant before this migration. The ledger records the limits each SSH
 * user certificate carries (JSON; null for certificates without), and which are single-use (valid
 * once, on their target only). Frozen once released.
 *
 * @module
 */
import type { Kysely, Migration } from "kysely";

export function grantLimitsMigration(): Migration {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema.alterTable("principal_subjects").addColumn("limits", "text").execute();
      await db.schema.alterTable("issued_certificates").addColumn("limits", "text").execute();
      await db.schema
        .alterTable("issued_certificates")
        .addColumn("single_use", "integer", (col) => col.notNull().defaultTo(0))
        .execute();
    },
  };
}
