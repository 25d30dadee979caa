/**
 * The audit log (`audit_events`): appended, listed in pages, and counted and scanned in keyset
 * pages for the export.
 *
 * @module
 */
import type { AuditEventFilter, AuditEventRecord, AuditEventRepository } from "@wap/core/storage";
import {
  type Expression,
  type ExpressionBuilder,
  type Insertable,
  type Selectable,
  type SqlBool,
  sql,
} from "kysely";
import type { SqlDialectName, SqlDialectTraits } from "../dialect.js";
import { fromDate, likeContains, toDate, toNumber } from "../lib/mapping.js";
import { listPage } from "../lib/page.js";
import { prepareInsert } from "../lib/prepared.js";
import type { QueryRunner } from "../repositories.js";
import type { AuditEventsTable, Database } from "../schema.js";

/** On the signing path: compiled once per dialect, run on the driver itself where it can be. */
export const insertAuditEvent = prepareInsert("audit_events");

export function auditEventToRow(e: AuditEventRecord): Insertable<AuditEventsTable> {
  return {
    id: e.id,
    workspace_id: e.workspaceId,
    actor_id: e.actorId,
    actor_type: e.actorType,
    action: e.action,
    resource: e.resource,
    ip_address: e.ipAddress,
    user_agent: e.userAgent,
    status_code: e.statusCode,
    request_id: e.requestId,
    occurred_at: fromDate(e.timestamp),
  };
}

function rowToAuditEvent(r: Selectable<AuditEventsTable>): AuditEventRecord {
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    actorId: r.actor_id,
    actorType: r.actor_type,
    action: r.action,
    resource: r.resource,
    ipAddress: r.ip_address,
    userAgent: r.user_agent,
    statusCode: r.status_code,
    requestId: r.request_id,
    timestamp: toDate(r.occurred_at),
  };
}

function decodeCursor(cursor: string): { occurredAt: number; seq: number } {
  const match = /^(-?\d{1,16}):(\d{1,19})$/.exec(cursor);
  if (!match) throw new RangeError(`not an audit scan cursor: ${cursor}`);
  return { occurredAt: toNumber(match[1]!), seq: toNumber(match[2]!) };
}

/** `<occurred_at>:<seq>` of the last row of a page. */
function encodeCursor(occurredAt: number, seq: number): string {
  return `${occurredAt}:${seq}`;
}

/**
 * The rows of a workspace's audit log that `filter` selects. `since` is inclusive and `until`
 * exclusive, so consecutive windows never overlap; list filters match any of their values.
 */
function auditFilter(
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
    if (filter.resources?.length) conditions.push(eb("resource", "in", [...filter.resources]));
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

function asciiLowerColumn(dialect: SqlDialectName, column: string) {
  // PostgreSQL folds every letter unless the collation is "C", where only ASCII letters fold.
  return dialect === "postgres" ? sql`lower(${sql.ref(column)} collate "C")` : sql`lower(${sql.ref(column)})`;
}

const searchedColumns = ["action", "resource", "actor_id", "actor_type", "ip_address", "user_agent"] as const;

/** Lower-cases ASCII letters only, the same on every engine (SQLite's lower() does just that). */
function asciiLower(text: string): string {
  return text.replace(/[A-Z]/g, (c) => c.toLowerCase());
}

export function createAuditEventRepository(
  run: QueryRunner,
  dialect: SqlDialectTraits,
): AuditEventRepository {
  return {
    async append(event) {
      await run.write((db) => insertAuditEvent.execute(db, dialect.name, auditEventToRow(event)));
    },
    async list(workspaceId, filter) {
      const where = auditFilter(workspaceId, filter, dialect.name);
      const page = await run.read((db) =>
        listPage(
          db.selectFrom("audit_events").where(where),
          (q) => q.selectAll().orderBy("occurred_at", "desc").orderBy("seq", "desc"),
          filter,
        ),
      );
      return { items: page.rows.map(rowToAuditEvent), total: page.total };
    },
    async count(workspaceId, window) {
      const row = await run.read((db) =>
        db
          .selectFrom("audit_events")
          .where(auditFilter(workspaceId, window, dialect.name))
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
          .where(auditFilter(workspaceId, request, dialect.name))
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
