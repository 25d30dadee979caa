/**
 * What the shared query layer needs to know about a dialect. Each adapter supplies one; everything
 * else (queries, mapping, migrations) is written once.
 *
 * @module
 */
import type { Expression, RawBuilder, SqlBool } from "kysely";

export type SqlDialectName = "sqlite" | "postgres";

/** A driver error, as the adapter reads it. */
export type DriverErrorKind =
  /**
   * A uniqueness or primary-key violation. `constraint` is the index name when the driver reports
   * it (pg); `columns` are `table.column` names when that is what the driver reports (SQLite).
   */
  | { readonly kind: "unique"; readonly constraint?: string; readonly columns?: readonly string[] }
  /** The database cannot be reached, or is busy past the timeout. */
  | { readonly kind: "unavailable" };

export interface SqlDialectTraits {
  readonly name: SqlDialectName;
  /**
   * PostgreSQL aborts the whole transaction after any failed statement. When true, every write
   * inside a transaction runs under a savepoint so that a caught UniqueViolationError leaves the
   * transaction usable, as it does on SQLite.
   */
  readonly failedStatementAbortsTransaction: boolean;
  /**
   * A statement that makes the rest of the current transaction wait for any other transaction
   * holding the same key, or undefined when the engine already runs one writer at a time (SQLite).
   */
  serializeOn(key: string): RawBuilder<unknown> | undefined;
  /** True when `column` (JSON text of an array of strings) has an element equal to `value`. */
  jsonArrayContains(column: string, value: string): Expression<SqlBool>;
  /** Reads a driver error; `undefined` for anything else (it is rethrown as is). */
  classifyError(error: unknown): DriverErrorKind | undefined;
}
