/**
 * A byte-for-byte picture of one workspace's rows in a SQLite database: rows with its workspace
 * id, its workspace row and its users, and (to a fixed point) every row whose foreign key points
 * at one of those. Taken before and after an attack, the two must be equal.
 */

/** The one call of better-sqlite3 used here. */
export interface QueryableDatabase {
  prepare(source: string): { all(): unknown[] };
}

export interface Tenant {
  readonly workspaceId: string;
  readonly userIds: readonly string[];
}

type Row = Record<string, unknown>;
type ForeignKey = { parent: string; from: string[]; to: string[] };

/** Every row of `tenant`, per table, as sorted JSON lines (bytes as hex). */
export function tenantRows(database: QueryableDatabase, tenant: Tenant): Record<string, string[]> {
  const tables = (
    database
      .prepare(
        "select name from sqlite_master where type = 'table' and name not like 'sqlite_%' and name not like 'wap_schema%'",
      )
      .all() as Array<{ name: string }>
  ).map((r) => r.name);
  const rows = new Map<string, Row[]>();
  const keys = new Map<string, ForeignKey[]>();
  const included = new Map<string, Set<number>>();
  for (const table of tables) {
    const all = database.prepare(`select * from "${table}"`).all() as Row[];
    rows.set(table, all);
    keys.set(table, foreignKeysOf(database, table));
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

/** `table`'s foreign keys, one per constraint (a composite key's columns together). */
function foreignKeysOf(database: QueryableDatabase, table: string): ForeignKey[] {
  const columns = database.prepare(`pragma foreign_key_list("${table}")`).all() as Array<{
    id: number;
    table: string;
    from: string;
    to: string | null;
  }>;
  const grouped = new Map<number, ForeignKey>();
  for (const column of columns) {
    const key = grouped.get(column.id) ?? { parent: column.table, from: [], to: [] };
    key.from.push(column.from);
    key.to.push(column.to ?? "id");
    grouped.set(column.id, key);
  }
  return [...grouped.values()];
}

function bytesAsHex(_key: string, value: unknown): unknown {
  if (value instanceof Uint8Array) return Buffer.from(value).toString("hex");
  if (typeof value === "bigint") return value.toString();
  return value;
}
