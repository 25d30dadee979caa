/**
 * The rows every request reads (its session, its membership, the authority it signs with) kept in
 * memory for a storage that is the only writer of its file.
 *
 * A read costs SQLite some microseconds, more than the rest of a simple call's storage work, and
 * the same few rows are read by every request. The cache holds the single-row answers of the
 * prepared queries that run on the driver directly (sqlite-storage.ts), and forgets everything at
 * the first statement that may change a row: any statement other than a SELECT, except the
 * writer thread's own kind (inserts into the append-only ledger and audit tables, which no cached
 * query reads). Since every statement of this process reaches SQLite through the adapter's
 * `prepare`, a write through the API is seen by the very next read: revoking a session,
 * removing a member or disabling an authority takes effect at once, as without the cache.
 *
 * Reads of the append-only tables are never cached (the writer thread adds to them on another
 * connection). Entries also expire after {@link entryLifetimeMs}, so that a change made to the
 * file by another program (the sqlite3 shell while the server runs) is seen within that time.
 *
 * @module
 */

/** How long a cached row may be served without being read again. */
export const entryLifetimeMs = 1000;

/** Results of more rows are not cached: only the single-row lookups of every request are worth it. */
const maxCachedRows = 1;
const maxEntries = 10_000;

/**
 * Tables written on the writer thread's connection: their rows change without a statement here
 * (the audit chain's heads move with each audit event it appends).
 */
const appendOnlyTables = /"(audit_events|issued_certificates|audit_chain_heads)"/;
const plainSelect = /^\s*select\s/i;
const appendInsert = /^\s*insert\s+into\s+"(audit_events|issued_certificates)"/i;

interface Entry {
  readonly rows: readonly Record<string, unknown>[];
  readonly expiresAt: number;
}

export interface ReadCache {
  /** Told of every statement before it runs on the connection. */
  observe(sql: string): void;
  /** The rows of a read: from memory when they are there, else from `read` (then kept). */
  rows(sql: string, parameters: readonly unknown[], read: () => unknown[]): unknown[];
}

export function createReadCache(now: () => number = Date.now): ReadCache {
  const entries = new Map<string, Entry>();
  return {
    observe(sql) {
      if (entries.size > 0 && !plainSelect.test(sql) && !appendInsert.test(sql)) entries.clear();
    },
    rows(sql, parameters, read) {
      const key = cacheKey(sql, parameters);
      if (key === undefined) return read();
      const at = now();
      const hit = entries.get(key);
      if (hit !== undefined && hit.expiresAt > at) return hit.rows.map(copyRow);
      const rows = read() as Record<string, unknown>[];
      if (rows.length <= maxCachedRows) {
        if (entries.size >= maxEntries) entries.delete(entries.keys().next().value as string);
        entries.set(key, { rows: rows.map(copyRow), expiresAt: at + entryLifetimeMs });
      }
      return rows;
    },
  };
}

/** The key of a cacheable read, or undefined: not a plain SELECT, an append-only table, or a parameter that is not a string or number. */
function cacheKey(sql: string, parameters: readonly unknown[]): string | undefined {
  if (!plainSelect.test(sql) || appendOnlyTables.test(sql)) return undefined;
  let key = sql;
  for (const parameter of parameters) {
    if (typeof parameter !== "string" && typeof parameter !== "number") return undefined;
    key += `\u0000${typeof parameter === "number" ? "n" : "s"}${parameter}`;
  }
  return key;
}

/** Callers get rows of their own: a byte column they clear or change does not change the cache. */
function copyRow(row: Record<string, unknown>): Record<string, unknown> {
  const copy = { ...row };
  for (const column in copy) {
    const value = copy[column];
    if (value instanceof Uint8Array) copy[column] = Buffer.from(value);
  }
  return copy;
}
