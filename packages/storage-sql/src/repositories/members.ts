/**
 * Workspace memberships (`workspace_members`): plain reads and writes, member profiles, and the
 * changes guarded so a workspace keeps an owner.
 *
 * @module
 */
import type {
  MemberProfileFilter,
  MemberProfileRecord,
  MemberRecord,
  MemberRepository,
  MembershipChange,
} from "@wap/core/storage";
import type { Expression, ExpressionBuilder, Insertable, Kysely, Selectable, SqlBool } from "kysely";
import type { SqlDialectTraits } from "../dialect.js";
import { fromDate, fromFlag, toDate, toNumber } from "../lib/mapping.js";
import { listPage } from "../lib/page.js";
import { prepare } from "../lib/prepared.js";
import { atomically, lowerContains } from "../lib/queries.js";
import type { QueryRunner } from "../repositories.js";
import type { Database, UsersTable, WorkspaceMembersTable } from "../schema.js";

/** On the signing path: compiled once per dialect, run on the driver itself where it can be. */
const memberQuery = prepare((db, workspaceId: string, userId: string) =>
  db
    .selectFrom("workspace_members")
    .selectAll()
    .where("workspace_id", "=", workspaceId)
    .where("user_id", "=", userId),
);

function memberToRow(m: MemberRecord): Insertable<WorkspaceMembersTable> {
  return {
    workspace_id: m.workspaceId,
    user_id: m.userId,
    role: m.role,
    created_at: fromDate(m.createdAt),
    updated_at: fromDate(m.updatedAt),
  };
}

/** A membership row joined with the user's public columns (prefixed `u_`). */
export type MemberProfileRow = Selectable<WorkspaceMembersTable> & {
  u_name: Selectable<UsersTable>["name"];
  u_username: Selectable<UsersTable>["username"];
  u_email: Selectable<UsersTable>["email"];
  u_email_verified: Selectable<UsersTable>["email_verified"];
  u_picture: Selectable<UsersTable>["picture"];
};

export function rowToMemberProfile(r: MemberProfileRow): MemberProfileRecord {
  return {
    member: rowToMember(r),
    user: {
      id: r.user_id,
      name: r.u_name,
      username: r.u_username,
      email: r.u_email,
      emailVerified: fromFlag(r.u_email_verified),
      picture: r.u_picture,
    },
  };
}

function rowToMember(r: Selectable<WorkspaceMembersTable>): MemberRecord {
  return {
    workspaceId: r.workspace_id,
    userId: r.user_id,
    role: r.role as MemberRecord["role"],
    createdAt: toDate(r.created_at),
    updatedAt: toDate(r.updated_at),
  };
}

/** The tables of a member listing, by their aliases. */
type MemberScope = Database & { m: Database["workspace_members"]; u: Database["users"] };

const memberRows = (db: Kysely<Database>) =>
  db.selectFrom("workspace_members as m").innerJoin("users as u", "u.id", "m.user_id");

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

export const profiles = (db: Kysely<Database>) => withProfileColumns(memberRows(db));

const withProfileColumns = (query: ReturnType<typeof memberRows>) =>
  query
    .selectAll("m")
    .select([
      "u.name as u_name",
      "u.username as u_username",
      "u.email as u_email",
      "u.email_verified as u_email_verified",
      "u.picture as u_picture",
    ]);

export function createMemberRepository(run: QueryRunner, dialect: SqlDialectTraits): MemberRepository {
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

  return {
    async insert(member) {
      await run.write((db) => db.insertInto("workspace_members").values(memberToRow(member)).execute());
    },
    async find(workspaceId, userId) {
      const { rows } = await run.read((db) =>
        memberQuery.execute(run, db, dialect.name, workspaceId, userId),
      );
      return rows[0] ? rowToMember(rows[0]) : null;
    },
    async listByWorkspace(workspaceId) {
      const rows = await run.read((db) =>
        db
          .selectFrom("workspace_members")
          .selectAll()
          .where("workspace_id", "=", workspaceId)
          .orderBy("created_at")
          .orderBy("user_id")
          .execute(),
      );
      return rows.map(rowToMember);
    },
    async listSoleOwnerships(userId) {
      const rows = await run.read((db) =>
        db
          .selectFrom("workspace_members as m")
          .select("m.workspace_id")
          .where("m.user_id", "=", userId)
          .where("m.role", "=", "owner")
          .where(({ not, exists, selectFrom }) =>
            not(
              exists(
                selectFrom("workspace_members as o")
                  .select("o.user_id")
                  .whereRef("o.workspace_id", "=", "m.workspace_id")
                  .where("o.role", "=", "owner")
                  .whereRef("o.user_id", "<>", "m.user_id"),
              ),
            ),
          )
          .orderBy("m.workspace_id")
          .execute(),
      );
      return rows.map((r) => r.workspace_id);
    },
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
          memberRows(db).where(where),
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
  };
}
