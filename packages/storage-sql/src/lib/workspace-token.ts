/**
 * The tables that hold at most one token per workspace (the daemon enrolment token, the
 * workspace invite): issuing a token replaces the workspace's previous one, and a token is found
 * either by its workspace or by its hash. The statements are the same for both, so they are
 * written once, here.
 *
 * @module
 */
import type { Insertable, Kysely, Selectable } from "kysely";
import type { QueryRunner } from "../repositories.js";
import type { Database } from "../schema.js";

/** Tables keyed by `workspace_id` that hold one token, looked up by `token_hash`. */
export type WorkspaceTokenTable = "daemon_enroll_tokens" | "workspace_invites";

/** The statements of a one-token-per-workspace table, mapped to and from its record type. */
export interface WorkspaceTokenQueries<R> {
  replace(record: R): Promise<void>;
  find(workspaceId: string): Promise<R | null>;
  findByTokenHash(tokenHash: string): Promise<R | null>;
  delete(workspaceId: string): Promise<boolean>;
}

// The table name is a parameter, which Kysely's per-table typing cannot follow; the columns used
// here exist on every table `WorkspaceTokenTable` admits.
type TokenRow = { workspace_id: string; token_hash: string };
const loosely = (db: Kysely<Database>) => db as unknown as Kysely<Record<string, TokenRow>>;

/** The replace, find and delete statements of `table`, read and written as records of type `R`. */
export function workspaceTokenQueries<T extends WorkspaceTokenTable, R>(
  run: QueryRunner,
  table: T,
  toRow: (record: R) => Insertable<Database[T]>,
  fromRow: (row: Selectable<Database[T]>) => R,
): WorkspaceTokenQueries<R> {
  const name: string = table;
  const findWhere = async (column: keyof TokenRow, value: string) => {
    const row = await run.read((db) =>
      loosely(db).selectFrom(name).selectAll().where(column, "=", value).executeTakeFirst(),
    );
    return row ? fromRow(row as unknown as Selectable<Database[T]>) : null;
  };
  return {
    async replace(record) {
      const row = toRow(record) as unknown as TokenRow;
      // Every column but the key takes the new token's value.
      const { workspace_id: _, ...replaced } = row;
      await run.write((db) =>
        loosely(db)
          .insertInto(name)
          .values(row)
          .onConflict((oc) => oc.column("workspace_id").doUpdateSet(replaced))
          .execute(),
      );
    },
    find: (workspaceId) => findWhere("workspace_id", workspaceId),
    findByTokenHash: (tokenHash) => findWhere("token_hash", tokenHash),
    async delete(workspaceId) {
      const result = await run.write((db) =>
        loosely(db).deleteFrom(name).where("workspace_id", "=", workspaceId).executeTakeFirst(),
      );
      return result.numDeletedRows > 0n;
    },
  };
}
