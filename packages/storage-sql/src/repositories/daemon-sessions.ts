/**
 * Web-terminal sessions (`daemon_sessions`) and the instance relaying each.
 *
 * @module
 */
import type { DaemonSessionRecord, DaemonSessionRepository, DaemonSessionState } from "@wap/core/storage";
import type { Insertable, Selectable, Updateable } from "kysely";
import { fromDate, fromDateOrNull, toDate, toDateOrNull } from "../lib/mapping.js";
import { findInWorkspace } from "../lib/scoped.js";
import type { QueryRunner } from "../repositories.js";
import type { DaemonSessionsTable } from "../schema-daemons.js";

function daemonSessionToRow(s: DaemonSessionRecord): Insertable<DaemonSessionsTable> {
  return {
    id: s.id,
    workspace_id: s.workspaceId,
    daemon_id: s.daemonId,
    user_id: s.userId,
    username: s.username,
    state: s.state,
    created_at: fromDate(s.createdAt),
    opened_at: fromDateOrNull(s.openedAt),
    closed_at: fromDateOrNull(s.closedAt),
    close_reason: s.closeReason,
  };
}

function rowToDaemonSession(r: Selectable<DaemonSessionsTable>): DaemonSessionRecord {
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    daemonId: r.daemon_id,
    userId: r.user_id,
    username: r.username,
    state: r.state as DaemonSessionState,
    createdAt: toDate(r.created_at),
    openedAt: toDateOrNull(r.opened_at),
    closedAt: toDateOrNull(r.closed_at),
    closeReason: r.close_reason,
  };
}

/** What every way of ending a session writes. */
function closedAs(at: Date, reason: string): Updateable<DaemonSessionsTable> {
  return { state: "closed", closed_at: fromDate(at), close_reason: reason };
}

const live: readonly DaemonSessionState[] = ["pending", "open"];

export function createDaemonSessionRepository(run: QueryRunner): DaemonSessionRepository {
  return {
    async insert(session) {
      await run.write((db) => db.insertInto("daemon_sessions").values(daemonSessionToRow(session)).execute());
    },
    async findById(workspaceId, id) {
      const row = await run.read((db) => findInWorkspace(db, "daemon_sessions", workspaceId, id));
      return row ? rowToDaemonSession(row) : null;
    },
    async listInWorkspace(workspaceId, states) {
      if (states.length === 0) return [];
      const rows = await run.read((db) =>
        db
          .selectFrom("daemon_sessions")
          .selectAll()
          .where("workspace_id", "=", workspaceId)
          .where("state", "in", [...states])
          .orderBy("created_at")
          .orderBy("id")
          .execute(),
      );
      return rows.map(rowToDaemonSession);
    },
    async listByDaemon(workspaceId, daemonId, states) {
      if (states.length === 0) return [];
      const rows = await run.read((db) =>
        db
          .selectFrom("daemon_sessions")
          .selectAll()
          .where("workspace_id", "=", workspaceId)
          .where("daemon_id", "=", daemonId)
          .where("state", "in", [...states])
          .orderBy("created_at")
          .orderBy("id")
          .execute(),
      );
      return rows.map(rowToDaemonSession);
    },
    async open(daemonId, id, at, createdSince, relay) {
      const row = await run.write((db) =>
        db
          .updateTable("daemon_sessions")
          .set({
            state: "open",
            opened_at: fromDate(at),
            ...(relay && { relay_instance: relay.instanceId, relay_url: relay.url }),
          })
          .where("id", "=", id)
          .where("daemon_id", "=", daemonId)
          .where("state", "=", "pending")
          .where("created_at", ">=", fromDate(createdSince))
          .returningAll()
          .executeTakeFirst(),
      );
      return row ? rowToDaemonSession(row) : null;
    },
    async findRelay(workspaceId, id) {
      const row = await run.read((db) =>
        db
          .selectFrom("daemon_sessions")
          .select(["state", "created_at", "close_reason", "relay_instance", "relay_url"])
          .where("workspace_id", "=", workspaceId)
          .where("id", "=", id)
          .executeTakeFirst(),
      );
      if (!row) return null;
      const relayed = row.relay_instance !== null && row.relay_url !== null;
      return {
        state: row.state as DaemonSessionState,
        createdAt: toDate(row.created_at),
        closeReason: row.close_reason,
        relay: relayed ? { instanceId: row.relay_instance!, url: row.relay_url! } : null,
      };
    },
    async closeOrphaned(now, reason, at, limit) {
      const rows = await run.write((db) =>
        db
          .updateTable("daemon_sessions")
          .set(closedAs(at, reason))
          .where("state", "=", "open")
          .where("id", "in", (eb) =>
            eb
              .selectFrom("daemon_sessions as orphan")
              .select("orphan.id")
              .where("orphan.state", "=", "open")
              .where("orphan.relay_instance", "is not", null)
              .where(({ not, exists, selectFrom }) =>
                not(
                  exists(
                    selectFrom("server_instances as i")
                      .select("i.id")
                      .whereRef("i.id", "=", "orphan.relay_instance")
                      .where("i.lease_expires_at", ">", fromDate(now)),
                  ),
                ),
              )
              .limit(limit),
          )
          .returningAll()
          .execute(),
      );
      return rows.map(rowToDaemonSession);
    },
    async close(workspaceId, id, reason, at) {
      const row = await run.write((db) =>
        db
          .updateTable("daemon_sessions")
          .set(closedAs(at, reason))
          .where("workspace_id", "=", workspaceId)
          .where("id", "=", id)
          .where("state", "in", [...live])
          .returningAll()
          .executeTakeFirst(),
      );
      return row ? rowToDaemonSession(row) : null;
    },
    async abandonPending(createdBefore, reason, at, limit) {
      const rows = await run.write((db) =>
        db
          .updateTable("daemon_sessions")
          .set(closedAs(at, reason))
          .where("state", "=", "pending")
          .where("id", "in", (eb) =>
            eb
              .selectFrom("daemon_sessions as stale")
              .select("stale.id")
              .where("stale.state", "=", "pending")
              .where("stale.created_at", "<", fromDate(createdBefore))
              .orderBy("stale.created_at")
              .limit(limit),
          )
          .returningAll()
          .execute(),
      );
      return rows.map(rowToDaemonSession);
    },
    async closeAllForDaemon(workspaceId, daemonId, reason, at) {
      const rows = await run.write((db) =>
        db
          .updateTable("daemon_sessions")
          .set(closedAs(at, reason))
          .where("workspace_id", "=", workspaceId)
          .where("daemon_id", "=", daemonId)
          .where("state", "in", [...live])
          .returningAll()
          .execute(),
      );
      return rows.map(rowToDaemonSession);
    },
  };
}
