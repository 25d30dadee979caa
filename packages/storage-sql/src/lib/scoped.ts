/**
 * The statements most repositories share: read, update or remove one row of a workspace-scoped
 * table, addressed by the workspace and its key. The workspace condition is what keeps tenants apart, so it is
 * written once, here.
 *
 * @module
 */
import type { Kysely, Selectable, Updateable } from "kysely";
import type { Database } from "../schema.js";

/** Tables whose rows belong to one workspace. */
export type WorkspaceTable = {
  [T in keyof Database]: Database[T] extends { workspace_id: unknown } ? T : never;
}[keyof Database];

// The table name is a parameter, which Kysely's per-table typing cannot follow; the columns used
// here exist on every table `WorkspaceTable` admits.
type ScopedRow = { workspace_id: string; id: string; domain: string };

/** Reads the row whose `key` column is `value` in the workspace. */
export async function findInWorkspace<T extends WorkspaceTable>(
  db: Kysely<Database>,
  table: T,
  workspaceId: string,
  value: string,
  key: "id" | "domain" = "id",
): Promise<Selectable<Database[T]> | undefined> {
  const loose = db as unknown as Kysely<Record<string, ScopedRow>>;
  const row = await loose
    .selectFrom(table as string)
    .selectAll()
    .where("workspace_id", "=", workspaceId)
    .where(key, "=", value)
    .executeTakeFirst();
  return row as Selectable<Database[T]> | undefined;
}

/** Deletes the row whose `key` column is `value` in the workspace; true when a row went. */
export async function deleteInWorkspace(
  db: Kysely<Database>,
  table: WorkspaceTable,
  workspaceId: string,
  value: string,
  key: "id" | "domain" = "id",
): Promise<boolean> {
  const loose = db as unknown as Kysely<Record<string, ScopedRow>>;
  const result = await loose
    .deleteFrom(table)
    .where("workspace_id", "=", workspaceId)
    .where(key, "=", value)
    .executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/** Updates the row whose `key` column is `value` in the workspace and returns it as stored now. */
export async function updateInWorkspace<T extends WorkspaceTable>(
  db: Kysely<Database>,
  table: T,
  workspaceId: string,
  value: string,
  set: Updateable<Database[T]>,
  key: "id" | "domain" = "id",
): Promise<Selectable<Database[T]> | undefined> {
  const loose = db as unknown as Kysely<Record<string, ScopedRow>>;
  const row = await loose
    .updateTable(table as string)
    .set(set as Updateable<ScopedRow>)
    .where("workspace_id", "=", workspaceId)
    .where(key, "=", value)
    .returningAll()
    .executeTakeFirst();
  return row as Selectable<Database[T]> | undefined;
}
