/**
 * Workspaces and their settings (`workspaces`, `workspace_settings`).
 *
 * @module
 */
import type {
  WorkspaceRecord,
  WorkspaceRepository,
  WorkspaceSettingsRecord,
  WorkspaceSettingsRepository,
} from "@wap/core/storage";
import type { Insertable, Selectable, Updateable } from "kysely";
import {
  fromDate,
  fromDateOrNull,
  fromFlag,
  toDate,
  toDateOrNull,
  toFlag,
  toNumber,
} from "../lib/mapping.js";
import type { QueryRunner } from "../repositories.js";
import type { WorkspacesTable } from "../schema.js";
import type { WorkspaceSettingsTable } from "../schema-workspace-access.js";

function rowToWorkspace(r: Selectable<WorkspacesTable>): WorkspaceRecord {
  return {
    id: r.id,
    name: r.name,
    description: r.description,
    createdBy: r.created_by,
    enrollAutoApprove: fromFlag(r.enroll_auto_approve),
    enrollExpiresAt: toDateOrNull(r.enroll_expires_at),
    inviteExpiresAt: toDateOrNull(r.invite_expires_at),
    createdAt: toDate(r.created_at),
    updatedAt: toDate(r.updated_at),
  };
}

function settingsToRow(s: WorkspaceSettingsRecord): Insertable<WorkspaceSettingsTable> {
  return {
    workspace_id: s.workspaceId,
    enroll_expiry_seconds: s.enrollExpirySeconds,
    invite_expiry_seconds: s.inviteExpirySeconds,
    updated_at: fromDate(s.updatedAt),
  };
}

function workspaceToRow(w: WorkspaceRecord): Insertable<WorkspacesTable> {
  return {
    id: w.id,
    name: w.name,
    description: w.description,
    created_by: w.createdBy,
    enroll_auto_approve: toFlag(w.enrollAutoApprove),
    enroll_expires_at: fromDateOrNull(w.enrollExpiresAt),
    invite_expires_at: fromDateOrNull(w.inviteExpiresAt),
    created_at: fromDate(w.createdAt),
    updated_at: fromDate(w.updatedAt),
  };
}

function rowToSettings(r: Selectable<WorkspaceSettingsTable>): WorkspaceSettingsRecord {
  return {
    workspaceId: r.workspace_id,
    enrollExpirySeconds: toNumber(r.enroll_expiry_seconds),
    inviteExpirySeconds: toNumber(r.invite_expiry_seconds),
    updatedAt: toDate(r.updated_at),
  };
}

export function createWorkspaceRepository(run: QueryRunner): WorkspaceRepository {
  return {
    async insert(workspace) {
      await run.write((db) => db.insertInto("workspaces").values(workspaceToRow(workspace)).execute());
    },
    async findById(id) {
      const row = await run.read((db) =>
        db.selectFrom("workspaces").selectAll().where("id", "=", id).executeTakeFirst(),
      );
      return row ? rowToWorkspace(row) : null;
    },
    async listForUser(userId) {
      const rows = await run.read((db) =>
        db
          .selectFrom("workspaces")
          .innerJoin("workspace_members", "workspace_members.workspace_id", "workspaces.id")
          .selectAll("workspaces")
          .where("workspace_members.user_id", "=", userId)
          .orderBy("workspaces.created_at")
          .orderBy("workspaces.id")
          .execute(),
      );
      return rows.map(rowToWorkspace);
    },
    async update(id, patch, updatedAt) {
      const set: Updateable<WorkspacesTable> = { updated_at: fromDate(updatedAt) };
      if (patch.name !== undefined) set.name = patch.name;
      if (patch.description !== undefined) set.description = patch.description;
      if (patch.enrollAutoApprove !== undefined) set.enroll_auto_approve = toFlag(patch.enrollAutoApprove);
      if (patch.enrollExpiresAt !== undefined) set.enroll_expires_at = fromDateOrNull(patch.enrollExpiresAt);
      if (patch.inviteExpiresAt !== undefined) set.invite_expires_at = fromDateOrNull(patch.inviteExpiresAt);
      const row = await run.write((db) =>
        db.updateTable("workspaces").set(set).where("id", "=", id).returningAll().executeTakeFirst(),
      );
      return row ? rowToWorkspace(row) : null;
    },
    async delete(id) {
      // Foreign keys cascade to everything in the workspace, in this one statement.
      const result = await run.write((db) =>
        db.deleteFrom("workspaces").where("id", "=", id).executeTakeFirst(),
      );
      return result.numDeletedRows > 0n;
    },
  };
}

export function createWorkspaceSettingsRepository(run: QueryRunner): WorkspaceSettingsRepository {
  return {
    async find(workspaceId) {
      const row = await run.read((db) =>
        db
          .selectFrom("workspace_settings")
          .selectAll()
          .where("workspace_id", "=", workspaceId)
          .executeTakeFirst(),
      );
      return row ? rowToSettings(row) : null;
    },
    async upsert(settings) {
      const row = settingsToRow(settings);
      await run.write((db) =>
        db
          .insertInto("workspace_settings")
          .values(row)
          .onConflict((oc) =>
            oc.column("workspace_id").doUpdateSet({
              enroll_expiry_seconds: row.enroll_expiry_seconds,
              invite_expiry_seconds: row.invite_expiry_seconds,
              updated_at: row.updated_at,
            }),
          )
          .execute(),
      );
    },
  };
}
