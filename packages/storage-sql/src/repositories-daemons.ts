/**
 * The daemon-protocol queries (migrations 006 and 007): the enrolment token, what the protocol
 * adds to daemons (with the leases of the server instances holding control streams), and
 * terminal sessions.
 *
 * @module
 */
import type {
  DaemonProtocolQueries,
  DaemonProtocolRepositories,
  DaemonSessionRecord,
  DaemonSessionState,
  DaemonSyncRecord,
  EnrollTokenRecord,
} from "@wap/core/storage";
import { type Insertable, type Selectable, type SqlBool, sql, type Updateable } from "kysely";
import { fromDate, fromDateOrNull, rowToDaemon, toDate, toDateOrNull, toJson } from "./lib/mapping.js";
import { findInWorkspace } from "./lib/scoped.js";
import { workspaceTokenQueries } from "./lib/workspace-token.js";
import type { QueryRunner } from "./repositories.js";
import type { DaemonEnrollTokensTable, DaemonSessionsTable } from "./schema-daemons.js";

function tokenToRow(t: EnrollTokenRecord): Insertable<DaemonEnrollTokensTable> {
  return {
    workspace_id: t.workspaceId,
    token_hash: t.tokenHash,
    created_by: t.createdBy,
    created_at: fromDate(t.createdAt),
    expires_at: fromDate(t.expiresAt),
  };
}

function rowToToken(r: Selectable<DaemonEnrollTokensTable>): EnrollTokenRecord {
  return {
    workspaceId: r.workspace_id,
    tokenHash: r.token_hash,
    createdBy: r.created_by,
    createdAt: toDate(r.created_at),
    expiresAt: toDate(r.expires_at),
  };
}

function sessionToRow(s: DaemonSessionRecord): Insertable<DaemonSessionsTable> {
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

function rowToSession(r: Selectable<DaemonSessionsTable>): DaemonSessionRecord {
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

const live: readonly DaemonSessionState[] = ["pending", "open"];

/** What every way of ending a session writes. */
function closedAs(at: Date, reason: string): Updateable<DaemonSessionsTable> {
  return { state: "closed", closed_at: fromDate(at), close_reason: reason };
}

/** A LIKE pattern matching text that starts with `prefix`; `!` escapes wildcards. */
function likePrefix(prefix: string): string {
  return `${prefix.replace(/[!%_]/g, (c) => `!${c}`)}%`;
}

/** The queries `DaemonRepository` gains with the daemon protocol. */
export function daemonProtocolQueries(run: QueryRunner): DaemonProtocolQueries {
  return {
    async findForAuthentication(id) {
      const row = await run.read((db) =>
        db.selectFrom("daemons").selectAll().where("id", "=", id).executeTakeFirst(),
      );
      return row ? rowToDaemon(row) : null;
    },
    async findByPublicKey(workspaceId, authPublicKey) {
      const row = await run.read((db) =>
        db
          .selectFrom("daemons")
          .selectAll()
          .where("workspace_id", "=", workspaceId)
          .where("auth_public_key", "=", authPublicKey)
          .orderBy("created_at")
          .executeTakeFirst(),
      );
      return row ? rowToDaemon(row) : null;
    },
    async setOnline(id, holder, at, ifHeldBy) {
      const result = await run.write((db) => {
        let query = db
          .updateTable("daemons")
          .set(
            holder === null
              ? { online_holder: null, online_since: null }
              : { online_holder: holder, online_since: fromDate(at) },
          )
          .where("id", "=", id);
        if (ifHeldBy === null) query = query.where("online_holder", "is", null);
        else if (ifHeldBy !== undefined) query = query.where("online_holder", "=", ifHeldBy);
        return query.executeTakeFirst();
      });
      return result.numUpdatedRows > 0n;
    },
    async onlineHolder(id) {
      const row = await run.read((db) =>
        db.selectFrom("daemons").select("online_holder").where("id", "=", id).executeTakeFirst(),
      );
      return row?.online_holder ?? null;
    },
    async releaseHolders(holderPrefix) {
      const result = await run.write((db) =>
        db
          .updateTable("daemons")
          .set({ online_holder: null, online_since: null })
          .where(sql<SqlBool>`${sql.ref("online_holder")} like ${likePrefix(holderPrefix)} escape '!'`)
          .executeTakeFirst(),
      );
      return Number(result.numUpdatedRows);
    },
    async listHolders(holderPrefix) {
      const rows = await run.read((db) =>
        db
          .selectFrom("daemons")
          .select(["id", "online_holder"])
          .where(sql<SqlBool>`${sql.ref("online_holder")} like ${likePrefix(holderPrefix)} escape '!'`)
          .execute(),
      );
      return rows.map((r) => ({ daemonId: r.id, holder: r.online_holder ?? "" }));
    },
    async renewInstanceLease(instanceId, expiresAt, now) {
      const renewed = await run.write((db) =>
        db
          .updateTable("server_instances")
          .set({ lease_expires_at: fromDate(expiresAt) })
          .where("id", "=", instanceId)
          .where("lease_expires_at", ">", fromDate(now))
          .executeTakeFirst(),
      );
      if (renewed.numUpdatedRows > 0n) return true;
      await run.write((db) =>
        db
          .insertInto("server_instances")
          .values({ id: instanceId, started_at: fromDate(now), lease_expires_at: fromDate(expiresAt) })
          .onConflict((oc) =>
            oc.column("id").doUpdateSet({ started_at: fromDate(now), lease_expires_at: fromDate(expiresAt) }),
          )
          .execute(),
      );
      return false;
    },
    async releaseLapsedInstances(now) {
      const at = fromDate(now);
      // A holder is `<instanceId>/<streamId>`: it counts while some live lease names its prefix.
      const released = await run.write((db) =>
        db
          .updateTable("daemons")
          .set({ online_holder: null, online_since: null })
          .where("online_holder", "is not", null)
          .where(({ not, exists, selectFrom }) =>
            not(
              exists(
                selectFrom("server_instances as i")
                  .select("i.id")
                  .where("i.lease_expires_at", ">", at)
                  .where(
                    sql<SqlBool>`substr(${sql.ref("daemons.online_holder")}, 1, length(${sql.ref("i.id")}) + 1) = ${sql.ref("i.id")} || '/'`,
                  ),
              ),
            ),
          )
          .executeTakeFirst(),
      );
      await run.write((db) =>
        db.deleteFrom("server_instances").where("lease_expires_at", "<=", at).execute(),
      );
      return Number(released.numUpdatedRows);
    },
    async removeInstance(instanceId) {
      await run.write((db) => db.deleteFrom("server_instances").where("id", "=", instanceId).execute());
    },
    async recordSync(workspaceId, id, sync) {
      await run.write((db) =>
        db
          .updateTable("daemons")
          .set({
            reported_users: toJson(sync.users),
            sent_principals: toJson(sync.principals),
            synced_at: fromDateOrNull(sync.syncedAt),
          })
          .where("workspace_id", "=", workspaceId)
          .where("id", "=", id)
          .execute(),
      );
    },
    async findSync(workspaceId, id) {
      const row = await run.read((db) =>
        db
          .selectFrom("daemons")
          .select(["reported_users", "sent_principals", "synced_at"])
          .where("workspace_id", "=", workspaceId)
          .where("id", "=", id)
          .executeTakeFirst(),
      );
      if (!row) return null;
      const sync: DaemonSyncRecord = {
        users: JSON.parse(row.reported_users) as string[],
        principals: JSON.parse(row.sent_principals) as Record<string, string[]>,
        syncedAt: toDateOrNull(row.synced_at),
      };
      return sync;
    },
  };
}

/** The enrolment-token and session repositories. */
export function createDaemonProtocolRepositories(run: QueryRunner): DaemonProtocolRepositories {
  return {
    enrollTokens: workspaceTokenQueries(run, "daemon_enroll_tokens", tokenToRow, rowToToken),

    daemonSessions: {
      async insert(session) {
        await run.write((db) => db.insertInto("daemon_sessions").values(sessionToRow(session)).execute());
      },
      async findById(workspaceId, id) {
        const row = await run.read((db) => findInWorkspace(db, "daemon_sessions", workspaceId, id));
        return row ? rowToSession(row) : null;
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
        return rows.map(rowToSession);
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
        return rows.map(rowToSession);
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
        return row ? rowToSession(row) : null;
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
        return rows.map(rowToSession);
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
        return row ? rowToSession(row) : null;
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
        return rows.map(rowToSession);
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
        return rows.map(rowToSession);
      },
    },
  };
}
