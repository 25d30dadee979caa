/**
 * Service accounts (`service_accounts`).
 *
 * @module
 */
import type { ServiceAccountFilter, ServiceAccountRecord, ServiceAccountRepository } from "@wap/core/storage";
import type { Expression, ExpressionBuilder, Insertable, Selectable, SqlBool, Updateable } from "kysely";
import type { SqlDialectTraits } from "../dialect.js";
import {
  fold,
  fromDate,
  fromDateOrNull,
  toDate,
  toDateOrNull,
  toJson,
  toStringArray,
} from "../lib/mapping.js";
import { listPage } from "../lib/page.js";
import { foldedContains } from "../lib/queries.js";
import { deleteInWorkspace, findInWorkspace, updateInWorkspace } from "../lib/scoped.js";
import type { QueryRunner } from "../repositories.js";
import type { Database, ServiceAccountsTable } from "../schema.js";

function rowToServiceAccount(r: Selectable<ServiceAccountsTable>): ServiceAccountRecord {
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    name: r.name,
    description: r.description,
    role: r.role as ServiceAccountRecord["role"],
    tags: toStringArray(r.tags),
    tokenHash: r.token_hash,
    expiresAt: toDateOrNull(r.expires_at),
    lastUsedAt: toDateOrNull(r.last_used_at),
    createdAt: toDate(r.created_at),
    updatedAt: toDate(r.updated_at),
  };
}

function serviceAccountToRow(a: ServiceAccountRecord): Insertable<ServiceAccountsTable> {
  return {
    id: a.id,
    workspace_id: a.workspaceId,
    name: a.name,
    name_folded: fold(a.name),
    description: a.description,
    description_folded: fold(a.description),
    role: a.role,
    tags: toJson(a.tags),
    token_hash: a.tokenHash,
    expires_at: fromDateOrNull(a.expiresAt),
    last_used_at: fromDateOrNull(a.lastUsedAt),
    created_at: fromDate(a.createdAt),
    updated_at: fromDate(a.updatedAt),
  };
}

function serviceAccountWhere(dialect: SqlDialectTraits, workspaceId: string, filter: ServiceAccountFilter) {
  return (eb: ExpressionBuilder<Database, "service_accounts">): Expression<SqlBool> => {
    const conditions: Expression<SqlBool>[] = [eb("workspace_id", "=", workspaceId)];
    if (filter.query) {
      conditions.push(
        eb.or([
          foldedContains("name_folded", filter.query),
          foldedContains("description_folded", filter.query),
        ]),
      );
    }
    if (filter.role) conditions.push(eb("role", "=", filter.role));
    for (const tag of filter.tags ?? [])
      conditions.push(dialect.jsonArrayContains("service_accounts.tags", tag));
    return eb.and(conditions);
  };
}

function serviceAccountPatch(
  patch: Partial<Pick<ServiceAccountRecord, "name" | "description" | "role" | "tags">>,
  updatedAt: Date,
): Updateable<ServiceAccountsTable> {
  const set: Updateable<ServiceAccountsTable> = { updated_at: fromDate(updatedAt) };
  if (patch.name !== undefined) {
    set.name = patch.name;
    set.name_folded = fold(patch.name);
  }
  if (patch.description !== undefined) {
    set.description = patch.description;
    set.description_folded = fold(patch.description);
  }
  if (patch.role !== undefined) set.role = patch.role;
  if (patch.tags !== undefined) set.tags = toJson(patch.tags);
  return set;
}

export function createServiceAccountRepository(
  run: QueryRunner,
  dialect: SqlDialectTraits,
): ServiceAccountRepository {
  return {
    async insert(account) {
      await run.write((db) =>
        db.insertInto("service_accounts").values(serviceAccountToRow(account)).execute(),
      );
    },
    async findById(workspaceId, id) {
      const row = await run.read((db) => findInWorkspace(db, "service_accounts", workspaceId, id));
      return row ? rowToServiceAccount(row) : null;
    },
    async findByIdForAuthentication(id) {
      const row = await run.read((db) =>
        db.selectFrom("service_accounts").selectAll().where("id", "=", id).executeTakeFirst(),
      );
      return row ? rowToServiceAccount(row) : null;
    },
    async list(workspaceId, filter) {
      const where = serviceAccountWhere(dialect, workspaceId, filter);
      const page = await run.read((db) =>
        listPage(
          db.selectFrom("service_accounts").where(where),
          (q) => q.selectAll().orderBy("created_at").orderBy("id"),
          filter,
        ),
      );
      return { items: page.rows.map(rowToServiceAccount), total: page.total };
    },
    async update(workspaceId, id, patch, updatedAt) {
      const set = serviceAccountPatch(patch, updatedAt);
      const row = await run.write((db) => updateInWorkspace(db, "service_accounts", workspaceId, id, set));
      return row ? rowToServiceAccount(row) : null;
    },
    async touchLastUsed(id, at) {
      await run.write((db) =>
        db
          .updateTable("service_accounts")
          .set({ last_used_at: fromDate(at) })
          .where("id", "=", id)
          .execute(),
      );
    },
    async delete(workspaceId, id) {
      return run.write((db) => deleteInWorkspace(db, "service_accounts", workspaceId, id));
    },
  };
}
