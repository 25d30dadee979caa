/**
 * A byte-for-byte picture of one workspace's rows, read from the server's SQLite file: rows with
 * its workspace id, its workspace row and its users, and (to a fixed point) every row whose
 * foreign key points at one of those. Taken before and after fuzzing, the two must be equal.
 */
import { createRequire } from "node:module";
import { join } from "node:path";

/** The few calls of better-sqlite3 used here. */
interface ReadOnlyDatabase {
  prepare(source: string): { all(): unknown[] };
  transaction<T>(fn: () => T): () => T;
  close(): void;
}

type Row = Record<string, unknown>;

/**
 * Opens the file read-only with the embedded storage's own driver (WAL: the running server keeps
 * writing while this reads).
 */
export function openReadOnly(file: string): ReadOnlyDatabase {
  const storagePackage = join(import.meta.dirname, "../../../storage-sqlite/package.json");
  const BetterSqlite3 = createRequire(storagePackage)("better-sqlite3") as new (
    file: string,
    options: { readonly: boolean; fileMustExist: boolean },
  ) => ReadOnlyDatabase;
  return new BetterSqlite3(file, { readonly: true, fileMustExist: true });
}

export interface Tenant {
  readonly workspaceId: string;
  readonly userIds: readonly string[];
}

/** Every row of `tenant`, per table, as sorted JSON lines. */
export function snapshotOf(database: ReadOnlyDatabase, tenant: Tenant): Record<string, string[]> {
  return database.transaction(() => read(database, tenant))();
}

function read(database: ReadOnlyDatabase, tenant: Tenant): Record<string, string[]> {
  const tables = (
    database
      .prepare(
        "select name from sqlite_master where type = 'table' and name not like 'sqlite_%' and name not like 'wap_schema%'",
      )
      .all() as Array<{ name: string }>
  ).map((r) => r.name);
  const rows = new Map<string, Row[]>();
  const keys = new Map<string, Array<{ parent: string; from: string[]; to: string[] }>>();
  const included = new Map<string, Set<number>>();
  for (const table of tables) {
    const all = database.prepare(`select * from "${table}"`).all() as Row[];
    rows.set(table, all);
    const foreignKeys = database.prepare(`pragma foreign_key_list("${table}")`).all() as Array<{
      id: number;
      table: string;
      from: string;
      to: string | null;
    }>;
    const grouped = new Map<number, { parent: string; from: string[]; to: string[] }>();
    for (const fk of foreignKeys) {
      const entry = grouped.get(fk.id) ?? { parent: fk.table, from: [], to: [] };
      entry.from.push(fk.from);
      entry.to.push(fk.to ?? "id");
      grouped.set(fk.id, entry);
    }
    keys.set(table, [...grouped.values()]);
    const mine = new Set<number>();
    all.forEach((row, index) => {
      if (row.workspace_id === tenant.workspaceId) mine.add(index);
      if (table === "workspaces" && row.id === tenant.workspaceId) mine.add(index);
      if (table === "users" && tenant.userIds.includes(String(row.id))) mine.add(index);
    });
    included.set(table, mine);
  }
  for (let changed = true; changed; ) {
    changed = false;
    for (const table of tables) {
      for (const fk of keys.get(table) ?? []) {
        const parents = rows.get(fk.parent) ?? [];
        const parentKeys = new Set(
          [...(included.get(fk.parent) ?? [])].map((i) => JSON.stringify(fk.to.map((c) => parents[i]?.[c]))),
        );
        if (parentKeys.size === 0) continue;
        const mine = included.get(table) ?? new Set<number>();
        rows.get(table)?.forEach((row, index) => {
          if (mine.has(index)) return;
          if (parentKeys.has(JSON.stringify(fk.from.map((c) => row[c])))) {
            mine.add(index);
            changed = true;
          }
        });
        included.set(table, mine);
      }
    }
  }
  const snapshot: Record<string, string[]> = {};
  for (const table of tables) {
    const list = [...(included.get(table) ?? [])].map((i) =>
      JSON.stringify(rows.get(table)?.[i], bytesAsHex),
    );
    if (list.length > 0) snapshot[table] = list.sort();
  }
  return snapshot;
}

function bytesAsHex(_key: string, value: unknown): unknown {
  if (value instanceof Uint8Array) return Buffer.from(value).toString("hex");
  if (typeof value === "bigint") return value.toString();
  return value;
}
