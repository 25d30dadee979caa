/**
 * The queries of the workspace-access repositories (memberships, settings, invite link, domains,
 * teams, principals and the target catalog), written once for both dialects.
 *
 * @module
 */
import type {
  MemberProfileFilter,
  MembershipChange,
  PrincipalFilter,
  PrincipalGrantsRecord,
  SubjectKind,
  SubjectRef,
  TeamFilter,
  WorkspaceAccessRepositories,
} from "@wap/core/storage";
import {
  type Expression,
  type ExpressionBuilder,
  type Kysely,
  type Selectable,
  type SqlBool,
  sql,
  type Updateable,
} from "kysely";
import type { SqlDialectTraits } from "./dialect.js";
import {
  fold,
  fromDate,
  fromDateOrNull,
  likeContains,
  rowToDaemon,
  rowToTarget,
  toDate,
  toJson,
  toNumber,
  toStringArray,
} from "./lib/mapping.js";
import {
  domainToRow,
  inviteToRow,
  type MemberProfileRow,
  rowsToPrincipal,
  rowToDomain,
  rowToInvite,
  rowToMemberProfile,
  rowToSettings,
  rowToTeam,
  settingsToRow,
  teamToRow,
} from "./lib/mapping-workspace-access.js";
import { listPage } from "./lib/page.js";
import { deleteInWorkspace, findInWorkspace, updateInWorkspace } from "./lib/scoped.js";
import { workspaceTokenQueries } from "./lib/workspace-token.js";
import type { QueryRunner } from "./repositories.js";
import type { Database } from "./schema.js";
import type { PrincipalSubjectsTable, PrincipalsTable, TeamsTable } from "./schema-workspace-access.js";

/** `column like '%q%'` on text folded with lower(): ASCII letters fold on every engine. */
function lowerContains(column: Expression<string>, query: string): Expression<SqlBool> {
  return sql<SqlBool>`lower(${column}) like ${likeContains(fold(query))} escape '!'`;
}

/** `column like '%q%'` on a column the query layer stored folded. */
function foldedContains(column: string, query: string): Expression<SqlBool> {
  return sql<SqlBool>`${sql.ref(column)} like ${likeContains(fold(query))} escape '!'`;
}

/** Splits long id lists: engines cap the number of bound parameters per statement. */
function chunks<T>(items: readonly T[], size = 500): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

const subjectColumn = {
  user: "user_id",
  team: "team_id",
  service_account: "service_account_id",
} as const satisfies Record<SubjectKind, keyof PrincipalSubjectsTable>;

/** Runs `fn` atomically: in the current transaction, or in a new one. */
function atomically<T>(db: Kysely<Database>, fn: (trx: Kysely<Database>) => Promise<T>): Promise<T> {
  return db.isTransaction ? fn(db) : db.transaction().execute(fn);
}

/** The tables of a member listing, by their aliases. */
type MemberScope = Database & { m: Database["workspace_members"]; u: Database["users"] };

/** Builds the workspace-access repositories over a runner. */
export function createWorkspaceAccessRepositories(
  run: QueryRunner,
  dialect: SqlDialectTraits,
): WorkspaceAccessRepositories {
  const members = (db: Kysely<Database>) =>
    db.selectFrom("workspace_members as m").innerJoin("users as u", "u.id", "m.user_id");
  const withProfileColumns = (query: ReturnType<typeof members>) =>
    query
      .selectAll("m")
      .select([
        "u.name as u_name",
        "u.username as u_username",
        "u.email as u_email",
        "u.email_verified as u_email_verified",
        "u.picture as u_picture",
      ]);
  const profiles = (db: Kysely<Database>) => withProfileColumns(members(db));

  /**
   * The one place owners are taken away: every change that could remove the last owner takes the
   * workspace's ownership lock first, so two racing demotions cannot both see "another owner".
   */
  async function guardedOwnerChange(
    workspaceId: string,
    userId: string,
    losesOwnership: (currentRole: string) => boolean,
    change: (trx: Kysely<Database>) => Promise<void>,
  ): Promise<MembershipChange> {
    return run.write((db) =>
      atomically(db, async (trx) => {
        const lock = dialect.serializeOn(`workspace-owners/${workspaceId}`);
        if (lock) await lock.execute(trx);
        const current = await trx
          .selectFrom("workspace_members")
          .select("role")
          .where("workspace_id", "=", workspaceId)
          .where("user_id", "=", userId)
          .executeTakeFirst();
        if (!current) return "not_found";
        if (current.role === "owner" && losesOwnership(current.role)) {
          const others = await trx
            .selectFrom("workspace_members")
            .select((eb) => eb.fn.countAll().as("n"))
            .where("workspace_id", "=", workspaceId)
            .where("role", "=", "owner")
            .where("user_id", "<>", userId)
            .executeTakeFirstOrThrow();
          if (toNumber(others.n) === 0) return "last_owner";
        }
        await change(trx);
        return "done";
      }),
    );
  }

  function memberWhere(workspaceId: string, filter: MemberProfileFilter) {
    return (eb: ExpressionBuilder<MemberScope, "m" | "u">): Expression<SqlBool> => {
      const conditions: Expression<SqlBool>[] = [eb("m.workspace_id", "=", workspaceId)];
      if (filter.role) conditions.push(eb("m.role", "=", filter.role));
      if (filter.query) {
        conditions.push(
          eb.or([
            lowerContains(eb.ref("u.name"), filter.query),
            lowerContains(eb.ref("u.username"), filter.query),
            lowerContains(eb.ref("u.email"), filter.query),
          ]),
        );
      }
      if (filter.teamIds && filter.teamIds.length > 0) {
        conditions.push(
          eb.exists(
            eb
              .selectFrom("team_members as tm")
              .select("tm.user_id")
              .whereRef("tm.workspace_id", "=", "m.workspace_id")
              .whereRef("tm.user_id", "=", "m.user_id")
              .where("tm.team_id", "in", [...filter.teamIds]),
          ),
        );
      }
      return eb.and(conditions);
    };
  }

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

  function principalWhere(workspaceId: string, filter: PrincipalFilter) {
    return (eb: ExpressionBuilder<Database, "principals">): Expression<SqlBool> => {
      const conditions: Expression<SqlBool>[] = [eb("principals.workspace_id", "=", workspaceId)];
      if (filter.targetId !== undefined) conditions.push(eb("principals.target_id", "=", filter.targetId));
      if (filter.query) conditions.push(lowerContains(eb.ref("principals.username"), filter.query));
      if (filter.subjectKind !== undefined) {
        conditions.push(
          eb.exists(
            eb
              .selectFrom("principal_subjects as s")
              .select("s.principal_id")
              .whereRef("s.principal_id", "=", "principals.id")
              .where("s.subject_type", "=", filter.subjectKind),
          ),
        );
      }
      return eb.and(conditions);
    };
  }

  /** Attaches the grants to principal rows, keeping their order. */
  async function withGrants(
    db: Kysely<Database>,
    workspaceId: string,
    rows: readonly Selectable<PrincipalsTable>[],
  ): Promise<PrincipalGrantsRecord[]> {
    const grants = new Map<string, Selectable<PrincipalSubjectsTable>[]>();
    for (const ids of chunks(rows.map((r) => r.id))) {
      const found = await db
        .selectFrom("principal_subjects")
        .selectAll()
        .where("workspace_id", "=", workspaceId)
        .where("principal_id", "in", ids)
        .orderBy("created_at")
        .orderBy("subject_type")
        .orderBy(sql`coalesce(user_id, team_id, service_account_id)`)
        .execute();
      for (const g of found) {
        const list = grants.get(g.principal_id) ?? [];
        list.push(g);
        grants.set(g.principal_id, list);
      }
    }
    return rows.map((r) => rowsToPrincipal(r, grants.get(r.id) ?? []));
  }

  /** Code-unit order on every engine (PostgreSQL would otherwise sort by the database's locale). */
  const binary = (column: string) =>
    dialect.name === "postgres" ? sql`${sql.ref(column)} collate "C"` : sql`${sql.ref(column)}`;

  return {
    memberships: {
      async findProfile(workspaceId, userId) {
        const row = await run.read((db) =>
          profiles(db)
            .where("m.workspace_id", "=", workspaceId)
            .where("m.user_id", "=", userId)
            .executeTakeFirst(),
        );
        return row ? rowToMemberProfile(row as MemberProfileRow) : null;
      },
      async listProfiles(workspaceId, filter) {
        const where = memberWhere(workspaceId, filter);
        const page = await run.read((db) =>
          listPage(
            members(db).where(where),
            (q) => withProfileColumns(q).orderBy("m.created_at").orderBy("m.user_id"),
            filter,
          ),
        );
        return { items: page.rows.map((r) => rowToMemberProfile(r as MemberProfileRow)), total: page.total };
      },
      changeRole(workspaceId, userId, role, updatedAt) {
        return guardedOwnerChange(
          workspaceId,
          userId,
          () => role !== "owner",
          async (trx) => {
            await trx
              .updateTable("workspace_members")
              .set({ role, updated_at: fromDate(updatedAt) })
              .where("workspace_id", "=", workspaceId)
              .where("user_id", "=", userId)
              .execute();
          },
        );
      },
      remove(workspaceId, userId) {
        return guardedOwnerChange(
          workspaceId,
          userId,
          () => true,
          async (trx) => {
            // Team memberships and grants go with it (foreign keys cascade).
            await trx
              .deleteFrom("workspace_members")
              .where("workspace_id", "=", workspaceId)
              .where("user_id", "=", userId)
              .execute();
          },
        );
      },
    },

    workspaceSettings: {
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
    },

    workspaceInvites: workspaceTokenQueries(run, "workspace_invites", inviteToRow, rowToInvite),

    workspaceDomains: {
      async insert(domain) {
        await run.write((db) => db.insertInto("workspace_domains").values(domainToRow(domain)).execute());
      },
      async find(workspaceId, domain) {
        const row = await run.read((db) =>
          findInWorkspace(db, "workspace_domains", workspaceId, domain, "domain"),
        );
        return row ? rowToDomain(row) : null;
      },
      async list(workspaceId) {
        const rows = await run.read((db) =>
          db.selectFrom("workspace_domains").selectAll().where("workspace_id", "=", workspaceId).execute(),
        );
        return rows.map(rowToDomain).sort((a, b) => compare(a.domain, b.domain));
      },
      async update(workspaceId, domain, patch, updatedAt) {
        const set: Updateable<Database["workspace_domains"]> = { updated_at: fromDate(updatedAt) };
        if (patch.verificationToken !== undefined) set.verification_token = patch.verificationToken;
        if (patch.verifiedAt !== undefined) set.verified_at = fromDateOrNull(patch.verifiedAt);
        const row = await run.write((db) =>
          updateInWorkspace(db, "workspace_domains", workspaceId, domain, set, "domain"),
        );
        return row ? rowToDomain(row) : null;
      },
      async delete(workspaceId, domain) {
        return run.write((db) => deleteInWorkspace(db, "workspace_domains", workspaceId, domain, "domain"));
      },
    },

    teams: {
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
    },

    principals: {
      async insert(principal) {
        await run.write((db) =>
          db
            .insertInto("principals")
            .values({
              id: principal.id,
              workspace_id: principal.workspaceId,
              target_id: principal.targetId,
              username: principal.username,
              created_at: fromDate(principal.createdAt),
            })
            .execute(),
        );
      },
      async findById(workspaceId, id) {
        const row = await run.read((db) => findInWorkspace(db, "principals", workspaceId, id));
        return row
          ? {
              id: row.id,
              workspaceId: row.workspace_id,
              targetId: row.target_id,
              username: row.username,
              createdAt: toDate(row.created_at),
            }
          : null;
      },
      async delete(workspaceId, id) {
        return run.write((db) => deleteInWorkspace(db, "principals", workspaceId, id));
      },
      async list(workspaceId, filter) {
        const where = principalWhere(workspaceId, filter);
        return run.read(async (db) => {
          const page = await listPage(
            db.selectFrom("principals").where(where),
            (q) =>
              q.selectAll().orderBy(binary("principals.target_id")).orderBy(binary("principals.username")),
            filter,
          );
          return { items: await withGrants(db, workspaceId, page.rows), total: page.total };
        });
      },
      async listByTargets(workspaceId, targetIds) {
        if (targetIds.length === 0) return [];
        return run.read(async (db) => {
          const rows: Selectable<PrincipalsTable>[] = [];
          for (const ids of chunks(targetIds)) {
            rows.push(
              ...(await db
                .selectFrom("principals")
                .selectAll()
                .where("workspace_id", "=", workspaceId)
                .where("target_id", "in", ids)
                .execute()),
            );
          }
          rows.sort((a, b) => compare(a.target_id, b.target_id) || compare(a.username, b.username));
          return withGrants(db, workspaceId, rows);
        });
      },
      async addSubjects(workspaceId, principalId, kind, subjectIds, at) {
        if (subjectIds.length === 0) return;
        const column = subjectColumn[kind];
        await run.write((db) =>
          db
            .insertInto("principal_subjects")
            .values(
              [...new Set(subjectIds)].map((id) => ({
                workspace_id: workspaceId,
                principal_id: principalId,
                subject_type: kind,
                user_id: kind === "user" ? id : null,
                team_id: kind === "team" ? id : null,
                service_account_id: kind === "service_account" ? id : null,
                created_at: fromDate(at),
              })),
            )
            // A grant that exists already stays as it is (the unique index of this subject column).
            .onConflict((oc) => oc.columns(["principal_id", column]).doNothing())
            .execute(),
        );
      },
      async removeSubjects(workspaceId, principalId, kind, subjectIds) {
        if (subjectIds.length === 0) return 0;
        const result = await run.write((db) =>
          db
            .deleteFrom("principal_subjects")
            .where("workspace_id", "=", workspaceId)
            .where("principal_id", "=", principalId)
            .where("subject_type", "=", kind)
            .where(subjectColumn[kind], "in", [...subjectIds])
            .executeTakeFirst(),
        );
        return Number(result.numDeletedRows);
      },
      async removeSubjectEverywhere(workspaceId, subject: SubjectRef) {
        const result = await run.write((db) =>
          db
            .deleteFrom("principal_subjects")
            .where("workspace_id", "=", workspaceId)
            .where("subject_type", "=", subject.kind)
            .where(subjectColumn[subject.kind], "=", subject.id)
            .executeTakeFirst(),
        );
        return Number(result.numDeletedRows);
      },
      async grantedTo(workspaceId, subjects) {
        if (subjects.length === 0) return [];
        return run.read(async (db) => {
          const ids = new Set<string>();
          for (const kind of Object.keys(subjectColumn) as SubjectKind[]) {
            const ofKind = subjects.filter((s) => s.kind === kind).map((s) => s.id);
            for (const part of chunks(ofKind)) {
              const rows = await db
                .selectFrom("principal_subjects")
                .select("principal_id")
                .where("workspace_id", "=", workspaceId)
                .where(subjectColumn[kind], "in", part)
                .execute();
              for (const r of rows) ids.add(r.principal_id);
            }
          }
          const principals: Selectable<PrincipalsTable>[] = [];
          for (const part of chunks([...ids])) {
            principals.push(
              ...(await db
                .selectFrom("principals")
                .selectAll()
                .where("workspace_id", "=", workspaceId)
                .where("id", "in", part)
                .execute()),
            );
          }
          principals.sort((a, b) => compare(a.target_id, b.target_id) || compare(a.username, b.username));
          return withGrants(db, workspaceId, principals);
        });
      },
      async usernames(workspaceId) {
        const rows = await run.read((db) =>
          db
            .selectFrom("principals")
            .select("username")
            .distinct()
            .where("workspace_id", "=", workspaceId)
            .execute(),
        );
        return rows.map((r) => r.username).sort(compare);
      },
    },

    targetCatalog: {
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
    },
  };
}

/** Code-unit order, the same on every engine (collations differ). */
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
