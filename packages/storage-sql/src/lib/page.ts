/**
 * The shape every filtered list shares: the number of rows the filter matches, and one page of
 * them in a fixed order. The filter and the order stay with each repository; counting and paging
 * are written once, here.
 *
 * @module
 */
import { type Kysely, type SelectQueryBuilder, sql } from "kysely";
import { toNumber } from "./mapping.js";

/** Which slice of the ordered rows to return. */
export interface PageWindow {
  readonly limit: number;
  readonly offset: number;
}

/**
 * Counts the rows `filtered` matches, then reads the page `window` of them as `select` chooses
 * and orders them. The order must be total (end on a unique column) so pages do not overlap.
 */
export async function listPage<DB, TB extends keyof DB, Row>(
  filtered: SelectQueryBuilder<DB, TB, object>,
  select: (query: SelectQueryBuilder<DB, TB, object>) => SelectQueryBuilder<DB, TB, Row>,
  window: PageWindow,
): Promise<{ rows: Row[]; total: number }> {
  // Kysely cannot name the selected column while the table is a type parameter.
  const count = (await filtered
    .select((eb) => eb.fn.countAll().as("n"))
    .executeTakeFirstOrThrow()) as unknown as { n: number | string | bigint };
  const rows = await select(filtered).limit(window.limit).offset(window.offset).execute();
  return { rows, total: toNumber(count.n) };
}

/**
 * Like {@link listPage}, but counts at most `cap` rows (`total` is `cap` when more match), so a
 * page over a very large filtered set costs about what the page costs, not a count of every match.
 */
export async function listPageCapped<DB, TB extends keyof DB, Row>(
  db: Kysely<DB>,
  filtered: SelectQueryBuilder<DB, TB, object>,
  select: (query: SelectQueryBuilder<DB, TB, object>) => SelectQueryBuilder<DB, TB, Row>,
  window: PageWindow,
  cap: number,
): Promise<{ rows: Row[]; total: number }> {
  const rows = await select(filtered).limit(window.limit).offset(window.offset).execute();
  // A short first page is its own count.
  if (window.offset === 0 && rows.length < window.limit) return { rows, total: rows.length };
  const capped = filtered.select(sql<number>`1`.as("one")).limit(cap);
  const count = await (db as unknown as Kysely<Record<string, object>>)
    .selectFrom(capped.as("capped") as never)
    .select(sql<number | string | bigint>`count(*)`.as("n"))
    .executeTakeFirstOrThrow();
  return { rows, total: toNumber((count as { n: number | string | bigint }).n) };
}
