/**
 * Query pieces the repositories share: text matching that folds case the same on every engine,
 * long id lists split for the engines' parameter limits, and code-unit ordering.
 *
 * @module
 */
import { type Expression, type Kysely, type SqlBool, sql } from "kysely";
import type { Database } from "../schema.js";
import { fold, likeContains } from "./mapping.js";

/** `column like '%q%'` on a column the query layer stored folded. */
export function foldedContains(column: string, query: string): Expression<SqlBool> {
  return sql<SqlBool>`${sql.ref(column)} like ${likeContains(fold(query))} escape '!'`;
}

/** `column like '%q%'` on text folded with lower(): ASCII letters fold on every engine. */
export function lowerContains(column: Expression<string>, query: string): Expression<SqlBool> {
  return sql<SqlBool>`lower(${column}) like ${likeContains(fold(query))} escape '!'`;
}

/** Splits long id lists: engines cap the number of bound parameters per statement. */
export function chunks<T>(items: readonly T[], size = 500): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** Runs `fn` atomically: in the current transaction, or in a new one. */
export function atomically<T>(db: Kysely<Database>, fn: (trx: Kysely<Database>) => Promise<T>): Promise<T> {
  return db.isTransaction ? fn(db) : db.transaction().execute(fn);
}

/** Code-unit order, the same on every engine (collations differ). */
export function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Every column of an upsert except the key and what an update never changes. */
export function excludedColumns<T extends string>(columns: readonly T[]) {
  return Object.fromEntries(columns.map((c) => [c, sql.ref(`excluded.${c}`)])) as Record<T, never>;
}
