/**
 * Principals and their grants (`principals`, `principal_subjects`).
 *
 * @module
 */
import type {
  ApprovalPolicy,
  GrantLimits,
  GrantRecord,
  GrantTerms,
  PrincipalFilter,
  PrincipalGrantsRecord,
  PrincipalRepository,
  SubjectKind,
  SubjectRef,
} from "@wap/core/storage";
import {
  type Expression,
  type ExpressionBuilder,
  type Kysely,
  type Selectable,
  type SqlBool,
  sql,
} from "kysely";
import type { SqlDialectTraits } from "../dialect.js";
import { fromDate, fromDateOrNull, toDate, toJson } from "../lib/mapping.js";
import { listPage } from "../lib/page.js";
import { chunks, compare, lowerContains } from "../lib/queries.js";
import { deleteInWorkspace, findInWorkspace } from "../lib/scoped.js";
import type { QueryRunner } from "../repositories.js";
import type { Database } from "../schema.js";
import type { PrincipalSubjectsTable, PrincipalsTable } from "../schema-workspace-access.js";

/** A grant row's subject and terms. */
function rowToGrant(g: Selectable<PrincipalSubjectsTable>): GrantRecord {
  const subject: SubjectRef =
    g.user_id !== null
      ? { kind: "user", id: g.user_id }
      : g.team_id !== null
        ? { kind: "team", id: g.team_id }
        : { kind: "service_account", id: g.service_account_id as string };
  const createdAt = toDate(g.created_at);
  const limits =
    g.limits === null || g.limits === undefined ? {} : { limits: JSON.parse(g.limits) as GrantLimits };
  if (g.grant_kind === "time_bound" && g.valid_until !== null) {
    return { kind: "time_bound", validUntil: toDate(g.valid_until), subject, createdAt, ...limits };
  }
  if (g.grant_kind === "on_request" && g.approval_policy !== null) {
    return {
      kind: "on_request",
      approval: JSON.parse(g.approval_policy) as ApprovalPolicy,
      subject,
      createdAt,
      ...limits,
    };
  }
  return { kind: "standing", subject, createdAt, ...limits };
}

/** The columns that hold a grant's terms. */
function termsColumns(terms: GrantTerms) {
  return {
    grant_kind: terms.kind,
    valid_until: fromDateOrNull(terms.kind === "time_bound" ? terms.validUntil : null),
    approval_policy: terms.kind === "on_request" ? toJson(terms.approval) : null,
    limits: terms.limits ? toJson(terms.limits) : null,
  };
}

/** A principal and the grant rows that name it, in grant order. */
function rowsToPrincipal(
  r: Selectable<PrincipalsTable>,
  grants: readonly Selectable<PrincipalSubjectsTable>[],
): PrincipalGrantsRecord {
  const userIds: string[] = [];
  const teamIds: string[] = [];
  const serviceAccountIds: string[] = [];
  for (const g of grants) {
    if (g.user_id !== null) userIds.push(g.user_id);
    else if (g.team_id !== null) teamIds.push(g.team_id);
    else if (g.service_account_id !== null) serviceAccountIds.push(g.service_account_id);
  }
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    targetId: r.target_id,
    username: r.username,
    createdAt: toDate(r.created_at),
    userIds,
    teamIds,
    serviceAccountIds,
    grants: grants.map(rowToGrant),
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

const subjectColumn = {
  user: "user_id",
  team: "team_id",
  service_account: "service_account_id",
} as const satisfies Record<SubjectKind, keyof PrincipalSubjectsTable>;

export function createPrincipalRepository(run: QueryRunner, dialect: SqlDialectTraits): PrincipalRepository {
  /** Code-unit order on every engine (PostgreSQL would otherwise sort by the database's locale). */
  const binary = (column: string) =>
    dialect.name === "postgres" ? sql`${sql.ref(column)} collate "C"` : sql`${sql.ref(column)}`;

  return {
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
          (q) => q.selectAll().orderBy(binary("principals.target_id")).orderBy(binary("principals.username")),
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
    async addSubjects(workspaceId, principalId, kind, subjectIds, at, terms = { kind: "standing" }) {
      if (subjectIds.length === 0) return;
      const column = subjectColumn[kind];
      const columns = termsColumns(terms);
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
              ...columns,
            })),
          )
          // A grant that exists already keeps its creation time and takes the new terms (the
          // unique index of this subject column).
          .onConflict((oc) => oc.columns(["principal_id", column]).doUpdateSet(columns))
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
    async removeLapsed(at) {
      return run.write(async (db) => {
        const rows = await db
          .deleteFrom("principal_subjects")
          .where("grant_kind", "=", "time_bound")
          .where("valid_until", "<=", fromDate(at))
          .returningAll()
          .execute();
        return rows.map((r) => ({
          workspaceId: r.workspace_id,
          principalId: r.principal_id,
          grant: rowToGrant(r),
        }));
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
  };
}
