/**
 * SQLite's traits for the shared query layer: JSON arrays through json_each, and better-sqlite3's
 * error codes.
 *
 * @module
 */
import type { DriverErrorKind, SqlDialectTraits } from "@wap/storage-sql";
import { type Expression, type SqlBool, sql } from "kysely";

const uniqueCodes = new Set(["SQLITE_CONSTRAINT_UNIQUE", "SQLITE_CONSTRAINT_PRIMARYKEY"]);
// Busy past busy_timeout, locked, or the file cannot be reached: worth retrying later.
const unavailableCodes = /^SQLITE_(BUSY|LOCKED|CANTOPEN|IOERR)/;

function classifyError(error: unknown): DriverErrorKind | undefined {
  if (!(error instanceof Error)) return undefined;
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string" && uniqueCodes.has(code)) {
    // "UNIQUE constraint failed: index 'users_username_lower_key'" (an index on an expression)
    const index = /constraint failed: index '([^']+)'/.exec(error.message);
    if (index?.[1] !== undefined) return { kind: "unique", constraint: index[1] };
    // "UNIQUE constraint failed: certificate_authorities.workspace_id, certificate_authorities.name"
    const match = /constraint failed: (.+)$/.exec(error.message);
    const columns = match?.[1]?.split(",").map((c) => c.trim());
    return columns === undefined ? { kind: "unique" } : { kind: "unique", columns };
  }
  if (typeof code === "string" && unavailableCodes.test(code)) return { kind: "unavailable" };
  // better-sqlite3 after the application closed a database it lent us.
  if (error instanceof TypeError && /database connection is not open/.test(error.message)) {
    return { kind: "unavailable" };
  }
  return undefined;
}

export const sqliteTraits: SqlDialectTraits = Object.freeze({
  name: "sqlite",
  // A failed statement rolls back only itself; the transaction stays usable.
  failedStatementAbortsTransaction: false,
  // SQLite runs one write transaction at a time already.
  serializeOn: () => undefined,
  jsonArrayContains(column: string, value: string): Expression<SqlBool> {
    return sql<SqlBool>`exists (select 1 from json_each(${sql.ref(column)}) where json_each.value = ${value})`;
  },
  classifyError,
});
