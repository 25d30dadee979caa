/**
 * The audit log read in bulk: the filters ListAuditLogs applies, counts, and the keyset pages
 * an export walks (oldest first, on the `(workspace_id, occurred_at, seq)` index), so exporting
 * never holds more than one page of rows.
 *
 * @module
 */
import type { AuditEventFilter, AuditLogRepository } from "@wap/core/storage";
import { type Expression, type ExpressionBuilder, type SqlBool, sql } from "kysely";
import type { SqlDialectName } from "./dialect.js";
import { fromDate, likeContains, rowToAuditEvent, toNumber } from "./lib/mapping.js";
import type { QueryRunner } from "./repositories.js";
import type { Database } from "./schema.js";

const searchedColumns = ["action", "resource", "actor_id", "actor_type", "ip_address", "user_agent"] as const;

/** Lower-cases ASCII letters only, the same on every engine (SQLite's lower() does just that). */
function asciiLower(text: string): string {
  return text.replace(/[A-Z]/g, (c) => c.toLowerCase());
}

function asciiLowerColumn(dialect: SqlDialectName, column: string) {
  // PostgreSQL folds every letter unless the collation is "C", where only ASCII letters fold.
  return dialect === "postgres" ? sql`lower(${sql.ref(column)} collate "C")` : sql`lower(${sql.ref(column)})`;
}

/**
 * The rows of a workspace's audit log that `filter` selects. `since` is inclusive and `until`
 * exclusive, so consecutive windows never overlap; list filters match any of their values.
 */
export function auditFilter(
  workspaceId: string,
  filter: Omit<AuditEventFilter, "limit" | "offset">,
  dialect: SqlDialectName,
) {
  return (eb: ExpressionBuilder<Database, "audit_events">): Expression<SqlBool> => {
    const conditions: Expression<SqlBool>[] = [eb("workspace_id", "=", workspaceId)];
    if (filter.since !== undefined) conditions.push(eb("occurred_at", ">=", fromDate(filter.since)));
    if (filter.until !== undefined) conditions.push(eb("occurred_at", "<", fromDate(filter.until)));
    if (filter.action) conditions.push(eb("action", "=", filter.action));
    if (filter.actorId) conditions.push(eb("actor_id", "=", filter.actorId));
    if (filter.actions?.length) conditions.push(eb("action", "in", [...filter.actions]));
    if (filter.actorIds?.length) conditions.push(eb("actor_id", "in", [...filter.actorIds]));
    if (filter.actorTypes?.length) conditions.push(eb("actor_type", "in", [...filter.actorTypes]));
    if (filter.search) {
      const pattern = likeContains(asciiLower(filter.search));
      conditions.push(
        eb.or(
          searchedColumns.map(
            (column) => sql<SqlBool>`${asciiLowerColumn(dialect, column)} like ${pattern} escape '!'`,
          ),
        ),
      );
    }
    return eb.and(conditions);
  };
}

/** `<occurred_at>:<seq>` of the last row of a page. */
function encodeCursor(occurredAt: number, seq: number): string {
  return `${occurredAt}:${seq}`;
}

function decodeCursor(cursor: string): { occurredAt: number; seq: number } {
  const match = /^(-?\d{1,16}):(\d{1,19})$/.exec(cursor);
  if (!match) throw new RangeError(`not an audit scan cursor: ${cursor}`);
  return { occurredAt: toNumber(match[1]!), seq: toNumber(match[2]!) };
}

export function createAuditLogRepository(run: QueryRunner, dialect: SqlDialectName): AuditLogRepository {
  return {
    async count(workspaceId, window) {
      const row = await run.read((db) =>
        db
          .selectFrom("audit_events")
          .where(auditFilter(workspaceId, window, dialect))
          .select((eb) => eb.fn.countAll().as("n"))
          .executeTakeFirstOrThrow(),
      );
      return toNumber(row.n);
    },
    async scan(workspaceId, request) {
      const after = request.after === undefined ? undefined : decodeCursor(request.after);
      const rows = await run.read((db) => {
        let query = db
          .selectFrom("audit_events")
          .selectAll()
          .where(auditFilter(workspaceId, request, dialect))
          .orderBy("occurred_at")
          .orderBy("seq")
          .limit(request.limit);
        if (after !== undefined) {
          query = query.where((eb) =>
            eb(eb.refTuple("occurred_at", "seq"), ">", eb.tuple(after.occurredAt, after.seq)),
          );
        }
        return query.execute();
      });
      const last = rows[rows.length - 1];
      return {
        items: rows.map(rowToAuditEvent),
        next:
          last === undefined || rows.length < request.limit
            ? null
            : encodeCursor(toNumber(last.occurred_at), toNumber(last.seq)),
      };
    },
  };
}
