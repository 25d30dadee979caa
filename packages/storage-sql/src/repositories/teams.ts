/**
 * Teams and their members (`teams`, `team_members`).
 *
 * @module
 */
import type { TeamFilter, TeamRecord, TeamRepository } from "@wap/core/storage";
import type { Expression, ExpressionBuilder, Insertable, Selectable, SqlBool, Updateable } from "kysely";
import type { SqlDialectTraits } from "../dialect.js";
import { fold, fromDate, toDate, toJson, toStringArray } from "../lib/mapping.js";
import { listPage } from "../lib/page.js";
import { chunks, foldedContains } from "../lib/queries.js";
import { deleteInWorkspace, findInWorkspace, updateInWorkspace } from "../lib/scoped.js";
import type { QueryRunner } from "../repositories.js";
import type { Database } from "../schema.js";
import type { TeamsTable } from "../schema-workspace-access.js";
import { type MemberProfileRow, profiles, rowToMemberProfile } from "./members.js";

function teamToRow(t: TeamRecord): Insertable<TeamsTable> {
  return {
    id: t.id,
    workspace_id: t.workspaceId,
    name: t.name,
    name_folded: fold(t.name),
    description: t.description,
    description_folded: fold(t.description),
    tags: toJson(t.tags),
    created_at: fromDate(t.createdAt),
    updated_at: fromDate(t.updatedAt),
  };
}

function rowToTeam(r: Selectable<TeamsTable>): TeamRecord {
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    name: r.name,
    description: r.description,
    tags: toStringArray(r.tags),
    createdAt: toDate(r.created_at),
    updatedAt: toDate(r.updated_at),
  };
}

export function createTeamRepository(run: QueryRunner, dialect: SqlDialectTraits): TeamRepository {
  function teamWhere(workspaceId: string, filter: TeamFilter) {
    return (eb: ExpressionBuilder<Database, "teams">): Expression<SqlBool> => {
      const conditions: Expression<SqlBool>[] = [eb("workspace_id", "=", workspaceId)];
      if (filter.query) {
        conditions.push(
          eb.or([
            foldedContains("name_folded", filter.query),
            foldedContains("description_folded", filter.query),
          ]),
        );
      }
      for (const tag of filter.tags ?? []) conditions.push(dialect.jsonArrayContains("teams.tags", tag));
      return eb.and(conditions);
    };
  }

  return {
    async insert(team) {
      await run.write((db) => db.insertInto("teams").values(teamToRow(team)).execute());
    },
    async findById(workspaceId, id) {
      const row = await run.read((db) => findInWorkspace(db, "teams", workspaceId, id));
      return row ? rowToTeam(row) : null;
    },
    async list(workspaceId, filter) {
      const where = teamWhere(workspaceId, filter);
      const page = await run.read((db) =>
        listPage(
          db.selectFrom("teams").where(where),
          (q) => q.selectAll().orderBy("created_at").orderBy("id"),
          filter,
        ),
      );
      return { items: page.rows.map(rowToTeam), total: page.total };
    },
    async update(workspaceId, id, patch, updatedAt) {
      const set: Updateable<TeamsTable> = { updated_at: fromDate(updatedAt) };
      if (patch.name !== undefined) {
        set.name = patch.name;
        set.name_folded = fold(patch.name);
      }
      if (patch.description !== undefined) {
        set.description = patch.description;
        set.description_folded = fold(patch.description);
      }
      if (patch.tags !== undefined) set.tags = toJson(patch.tags);
      const row = await run.write((db) => updateInWorkspace(db, "teams", workspaceId, id, set));
      return row ? rowToTeam(row) : null;
    },
    async delete(workspaceId, id) {
      // Its memberships and grants go with it (foreign keys cascade).
      return run.write((db) => deleteInWorkspace(db, "teams", workspaceId, id));
    },
    async addMember(workspaceId, teamId, userId, at) {
      const result = await run.write((db) =>
        db
          .insertInto("team_members")
          .values({ workspace_id: workspaceId, team_id: teamId, user_id: userId, created_at: fromDate(at) })
          .onConflict((oc) => oc.columns(["team_id", "user_id"]).doNothing())
          .executeTakeFirst(),
      );
      return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
    },
    async removeMember(workspaceId, teamId, userId) {
      const result = await run.write((db) =>
        db
          .deleteFrom("team_members")
          .where("workspace_id", "=", workspaceId)
          .where("team_id", "=", teamId)
          .where("user_id", "=", userId)
          .executeTakeFirst(),
      );
      return result.numDeletedRows > 0n;
    },
    async listMembers(workspaceId, teamIds) {
      if (teamIds.length === 0) return [];
      return run.read(async (db) => {
        const out = [];
        for (const ids of chunks(teamIds)) {
          const rows = await profiles(db)
            .innerJoin("team_members as tm", (join) =>
              join.onRef("tm.workspace_id", "=", "m.workspace_id").onRef("tm.user_id", "=", "m.user_id"),
            )
            .select(["tm.team_id as tm_team_id", "tm.created_at as tm_created_at"])
            .where("m.workspace_id", "=", workspaceId)
            .where("tm.team_id", "in", ids)
            .orderBy("tm.created_at")
            .orderBy("tm.user_id")
            .execute();
          for (const r of rows)
            out.push({ teamId: r.tm_team_id, ...rowToMemberProfile(r as MemberProfileRow) });
        }
        return out;
      });
    },
    async teamsOf(workspaceId, userId) {
      const rows = await run.read((db) =>
        db
          .selectFrom("team_members")
          .select("team_id")
          .where("workspace_id", "=", workspaceId)
          .where("user_id", "=", userId)
          .orderBy("team_id")
          .execute(),
      );
      return rows.map((r) => r.team_id);
    },
  };
}
