/**
 * PostgreSQL's traits for the shared query layer: JSON arrays through jsonb containment, and
 * pg's SQLSTATE codes and socket errors.
 *
 * @module
 */
import type { DriverErrorKind, SqlDialectTraits } from "@wap/storage-sql";
import { type Expression, type SqlBool, sql } from "kysely";

// Socket-level failures: the server is down, unreachable, or dropped us.
const networkCodes = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
]);
// Server-side SQLSTATEs meaning "not now": shutdown, starting up, too many connections.
const unavailableStates = new Set(["57P01", "57P02", "57P03", "53300", "53400"]);
// pg's own messages when a connection dies or never comes (they carry no code).
const connectionMessages =
  /Connection terminated|connection error and is not queryable|timeout exceeded when trying to connect|Connection ended/i;

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

function isUnavailable(error: Error): boolean {
  const code = codeOf(error);
  if (code !== undefined) {
    if (networkCodes.has(code) || unavailableStates.has(code) || code.startsWith("08")) return true;
  }
  // Node reports a failed dual-stack connect as an AggregateError of per-address errors.
  if (error instanceof AggregateError && error.errors.some((e) => networkCodes.has(codeOf(e) ?? "")))
    return true;
  return connectionMessages.test(error.message);
}

function classifyError(error: unknown): DriverErrorKind | undefined {
  if (!(error instanceof Error)) return undefined;
  if (codeOf(error) === "23505") {
    const constraint = (error as { constraint?: unknown }).constraint;
    return typeof constraint === "string" ? { kind: "unique", constraint } : { kind: "unique" };
  }
  return isUnavailable(error) ? { kind: "unavailable" } : undefined;
}

export const postgresTraits: SqlDialectTraits = Object.freeze({
  name: "postgres",
  failedStatementAbortsTransaction: true,
  // A transaction-level advisory lock: released at commit or rollback, never leaked.
  serializeOn: (key: string) => sql`select pg_advisory_xact_lock(hashtextextended(${key}, 0))`,
  jsonArrayContains(column: string, value: string): Expression<SqlBool> {
    return sql<SqlBool>`(${sql.ref(column)})::jsonb @> jsonb_build_array(${value}::text)`;
  },
  classifyError,
});
