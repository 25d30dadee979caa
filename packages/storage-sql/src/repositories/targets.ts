/**
 * Targets (`targets`), with the lookups access decisions and filter UIs need.
 *
 * @module
 */
import type { TargetFilter, TargetRecord, TargetRepository } from "@wap/core/storage";
import {
  type Expression,
  type ExpressionBuilder,
  type Insertable,
  type Selectable,
  type SqlBool,
  sql,
  type Updateable,
} from "kysely";
import type { SqlDialectTraits } from "../dialect.js";
import {
  fold,
  fromDate,
  likeContains,
  toDate,
  toJson,
  toNumber,
  toStringArray,
  toStringMap,
} from "../lib/mapping.js";
import { listPage } from "../lib/page.js";
import { chunks, compare } from "../lib/queries.js";
import { deleteInWorkspace, findInWorkspace, updateInWorkspace } from "../lib/scoped.js";
import type { QueryRunner } from "../repositories.js";
import type { Database, TargetsTable } from "../schema.js";
import { rowToDaemon } from "./daemons.js";

function targetToRow(t: TargetRecord): Insertable<TargetsTable> {
  return {
    id: t.id,
    workspace_id: t.workspaceId,
    ca_id: t.caId,
    daemon_id: t.daemonId,
    name: t.name,
    name_folded: fold(t.name),
    description: t.description,
    tags: toJson(t.tags),
    endpoints: toJson(t.endpoints),
    reported_endpoints: toJson(t.reportedEndpoints ?? []),
    metadata: toJson(t.metadata),
    created_at: fromDate(t.createdAt),
    updated_at: fromDate(t.updatedAt),
  };
}

/** Present only when something waits: a target without a report reads as it was written. */
function reportedEndpointsOf(column: string): Pick<TargetRecord, "reportedEndpoints"> {
  const reported = toStringArray(column);
  return reported.length > 0 ? { reportedEndpoints: reported } : {};
}

function rowToTarget(r: Selectable<TargetsTable>): TargetRecord {
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    caId: r.ca_id,
    daemonId: r.daemon_id,
    name: r.name,
    description: r.description,
    tags: toStringArray(r.tags),
    endpoints: toStringArray(r.endpoints),
    ...reportedEndpointsOf(r.reported_endpoints),
    metadata: toStringMap(r.metadata),
    createdAt: toDate(r.created_at),
    updatedAt: toDate(r.updated_at),
  };
}

function targetWhere(dialect: SqlDialectTraits, workspaceId: string, filter: TargetFilter) {
  return (eb: ExpressionBuilder<Database, "targets">): Expression<SqlBool> => {
    const conditions: Expression<SqlBool>[] = [eb("workspace_id", "=", workspaceId)];
    if (filter.caId !== undefined) conditions.push(eb("ca_id", "=", filter.caId));
    if (filter.daemonId !== undefined) conditions.push(eb("daemon_id", "=", filter.daemonId));
    if (filter.query) {
      // Names are ASCII (their pattern); descriptions fold their ASCII letters on every engine.
      const pattern = likeContains(fold(filter.query));
      conditions.push(
        eb.or([
          sql<SqlBool>`${sql.ref("targets.name_folded")} like ${pattern} escape '!'`,
          sql<SqlBool>`lower(${sql.ref("targets.description")}) like ${pattern} escape '!'`,
        ]),
      );
    }
    for (const tag of filter.tags ?? []) conditions.push(dialect.jsonArrayContains("targets.tags", tag));
    if (filter.principals && filter.principals.length > 0) {
      conditions.push(
        eb.exists(
          eb
            .selectFrom("principals")
            .select("principals.id")
            .whereRef("principals.workspace_id", "=", "targets.workspace_id")
            .whereRef("principals.target_id", "=", "targets.id")
            .where("principals.username", "in", [...filter.principals]),
        ),
      );
    }
    return eb.and(conditions);
  };
}

function targetPatch(
  patch: Partial<
    Pick<
      TargetRecord,
      "caId" | "daemonId" | "name" | "description" | "tags" | "endpoints" | "reportedEndpoints" | "metadata"
    >
  >,
  updatedAt: Date,
): Updateable<TargetsTable> {
  const set: Updateable<TargetsTable> = { updated_at: fromDate(updatedAt) };
  if (patch.caId !== undefined) set.ca_id = patch.caId;
  if (patch.daemonId !== undefined) set.daemon_id = patch.daemonId;
  if (patch.name !== undefined) {
    set.name = patch.name;
    set.name_folded = fold(patch.name);
  }
  if (patch.description !== undefined) set.description = patch.description;
  if (patch.tags !== undefined) set.tags = toJson(patch.tags);
  if (patch.endpoints !== undefined) set.endpoints = toJson(patch.endpoints);
  if (patch.reportedEndpoints !== undefined) set.reported_endpoints = toJson(patch.reportedEndpoints);
  if (patch.metadata !== undefined) set.metadata = toJson(patch.metadata);
  return set;
}

export function createTargetRepository(run: QueryRunner, dialect: SqlDialectTraits): TargetRepository {
  return {
    async insert(target) {
      await run.write((db) => db.insertInto("targets").values(targetToRow(target)).execute());
    },
    async findById(workspaceId, id) {
      const row = await run.read((db) => findInWorkspace(db, "targets", workspaceId, id));
      return row ? rowToTarget(row) : null;
    },
    async list(workspaceId, filter) {
      const where = targetWhere(dialect, workspaceId, filter);
      const page = await run.read((db) =>
        listPage(
          db.selectFrom("targets").where(where),
          (q) => q.selectAll().orderBy("created_at").orderBy("id"),
          filter,
        ),
      );
      return { items: page.rows.map(rowToTarget), total: page.total };
    },
    async update(workspaceId, id, patch, updatedAt) {
      const row = await run.write((db) =>
        updateInWorkspace(db, "targets", workspaceId, id, targetPatch(patch, updatedAt)),
      );
      return row ? rowToTarget(row) : null;
    },
    async delete(workspaceId, id) {
      return run.write((db) => deleteInWorkspace(db, "targets", workspaceId, id));
    },
    async countByCa(workspaceId, caId) {
      const row = await run.read((db) =>
        db
          .selectFrom("targets")
          .where("workspace_id", "=", workspaceId)
          .where("ca_id", "=", caId)
          .select((eb) => eb.fn.countAll().as("n"))
          .executeTakeFirstOrThrow(),
      );
      return toNumber(row.n);
    },
    async listByIds(workspaceId, ids) {
      if (ids.length === 0) return [];
      const rows = await run.read(async (db) => {
        const out = [];
        for (const part of chunks(ids)) {
          out.push(
            ...(await db
              .selectFrom("targets")
              .selectAll()
              .where("workspace_id", "=", workspaceId)
              .where("id", "in", part)
              .execute()),
          );
        }
        return out;
      });
      return rows
        .map(rowToTarget)
        .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || compare(a.id, b.id));
    },
    async tags(workspaceId) {
      // JSON arrays expand differently per engine; a workspace's tag lists are small.
      const rows = await run.read((db) =>
        db.selectFrom("targets").select("tags").where("workspace_id", "=", workspaceId).execute(),
      );
      const tags = new Set<string>();
      for (const r of rows) for (const tag of toStringArray(r.tags)) tags.add(tag);
      return [...tags].sort(compare);
    },
    async daemonsOf(workspaceId, targetIds) {
      if (targetIds.length === 0) return [];
      const rows = await run.read(async (db) => {
        const out = [];
        for (const part of chunks(targetIds)) {
          out.push(
            ...(await db
              .selectFrom("daemons")
              .selectAll()
              .where("workspace_id", "=", workspaceId)
              .where("target_id", "in", part)
              .execute()),
          );
        }
        return out;
      });
      return rows
        .map(rowToDaemon)
        .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || compare(a.id, b.id));
    },
  };
}
