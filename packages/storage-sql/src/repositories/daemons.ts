/**
 * Daemons (`daemons`), with what the daemon protocol adds: lookups by id or key, who holds the
 * control stream, the leases of server instances (`server_instances`), the last sync.
 *
 * @module
 */
import type { DaemonFilter, DaemonRecord, DaemonRepository, DaemonSyncRecord } from "@wap/core/storage";
import {
  type Expression,
  type ExpressionBuilder,
  type Insertable,
  type Selectable,
  type SqlBool,
  sql,
  type Updateable,
} from "kysely";
import {
  fold,
  fromDate,
  fromDateOrNull,
  fromFlag,
  toDate,
  toDateOrNull,
  toFlag,
  toJson,
  toStringMap,
} from "../lib/mapping.js";
import { listPage } from "../lib/page.js";
import { foldedContains } from "../lib/queries.js";
import { deleteInWorkspace, findInWorkspace, updateInWorkspace } from "../lib/scoped.js";
import type { QueryRunner } from "../repositories.js";
import type { DaemonsTable, Database } from "../schema.js";

function daemonToRow(d: DaemonRecord): Insertable<DaemonsTable> {
  return {
    id: d.id,
    workspace_id: d.workspaceId,
    target_id: d.targetId,
    name: d.name,
    name_folded: fold(d.name),
    status: d.status,
    record_sessions: toFlag(d.recordSessions),
    require_recording: toFlag(d.requireRecording ?? false),
    metadata: toJson(d.metadata),
    auth_public_key: d.authPublicKey,
    auth_method: d.authMethod,
    online_since: fromDateOrNull(d.onlineSince),
    created_at: fromDate(d.createdAt),
    updated_at: fromDate(d.updatedAt),
  };
}

export function rowToDaemon(r: Selectable<DaemonsTable>): DaemonRecord {
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    targetId: r.target_id,
    name: r.name,
    status: r.status as DaemonRecord["status"],
    recordSessions: fromFlag(r.record_sessions),
    requireRecording: fromFlag(r.require_recording),
    metadata: toStringMap(r.metadata),
    authPublicKey: r.auth_public_key,
    authMethod: r.auth_method,
    onlineSince: toDateOrNull(r.online_since),
    createdAt: toDate(r.created_at),
    updatedAt: toDate(r.updated_at),
  };
}

function daemonPatch(
  patch: Partial<
    Pick<
      DaemonRecord,
      "status" | "recordSessions" | "requireRecording" | "metadata" | "name" | "targetId" | "onlineSince"
    >
  >,
  updatedAt: Date,
): Updateable<DaemonsTable> {
  const set: Updateable<DaemonsTable> = { updated_at: fromDate(updatedAt) };
  if (patch.status !== undefined) set.status = patch.status;
  if (patch.recordSessions !== undefined) set.record_sessions = toFlag(patch.recordSessions);
  if (patch.requireRecording !== undefined) set.require_recording = toFlag(patch.requireRecording);
  if (patch.metadata !== undefined) set.metadata = toJson(patch.metadata);
  if (patch.name !== undefined) {
    set.name = patch.name;
    set.name_folded = fold(patch.name);
  }
  if (patch.targetId !== undefined) set.target_id = patch.targetId;
  if (patch.onlineSince !== undefined) set.online_since = fromDateOrNull(patch.onlineSince);
  return set;
}

/** A LIKE pattern matching text that starts with `prefix`; `!` escapes wildcards. */
function likePrefix(prefix: string): string {
  return `${prefix.replace(/[!%_]/g, (c) => `!${c}`)}%`;
}

function daemonWhere(workspaceId: string, filter: DaemonFilter) {
  return (eb: ExpressionBuilder<Database, "daemons">): Expression<SqlBool> => {
    const conditions: Expression<SqlBool>[] = [eb("workspace_id", "=", workspaceId)];
    if (filter.query) conditions.push(foldedContains("name_folded", filter.query));
    if (filter.online !== undefined) {
      conditions.push(eb("online_since", filter.online ? "is not" : "is", null));
    }
    if (filter.status !== undefined) conditions.push(eb("status", "=", filter.status));
    return eb.and(conditions);
  };
}

export function createDaemonRepository(run: QueryRunner): DaemonRepository {
  return {
    async insert(daemon) {
      await run.write((db) => db.insertInto("daemons").values(daemonToRow(daemon)).execute());
    },
    async findById(workspaceId, id) {
      const row = await run.read((db) => findInWorkspace(db, "daemons", workspaceId, id));
      return row ? rowToDaemon(row) : null;
    },
    async list(workspaceId, filter) {
      const where = daemonWhere(workspaceId, filter);
      const page = await run.read((db) =>
        listPage(
          db.selectFrom("daemons").where(where),
          (q) => q.selectAll().orderBy("created_at").orderBy("id"),
          filter,
        ),
      );
      return { items: page.rows.map(rowToDaemon), total: page.total };
    },
    async update(workspaceId, id, patch, updatedAt) {
      const set = daemonPatch(patch, updatedAt);
      const row = await run.write((db) => updateInWorkspace(db, "daemons", workspaceId, id, set));
      return row ? rowToDaemon(row) : null;
    },
    async delete(workspaceId, id) {
      return run.write((db) => deleteInWorkspace(db, "daemons", workspaceId, id));
    },
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
