/**
 * The shape every filtered list shares: the number of rows the filter matches, and one page of
 * them in a fixed order. The filter and the order stay with each repository; counting and paging
 * are written once, here.
 *
 * @module
 */
import type { SelectQueryBuilder } from "kysely";
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
 * Like {@link listPage}, without counting: reads one row past the page, and reports as `total`
 * the rows up to the end of the page plus one when more follow (a lower bound that is exact on
 * the last page). A page over a very large filtered set then costs what the page costs.
 */
export async function listPageProbe<DB, TB extends keyof DB, Row>(
  filtered: SelectQueryBuilder<DB, TB, object>,
  select: (query: SelectQueryBuilder<DB, TB, object>) => SelectQueryBuilder<DB, TB, Row>,
  window: PageWindow,
): Promise<{ rows: Row[]; total: number }> {
  const rows = await select(filtered)
    .limit(window.limit + 1)
    .offset(window.offset)
    .execute();
  const more = rows.length > window.limit;
  if (more) rows.pop();
  return { rows, total: window.offset + rows.length + (more ? 1 : 0) };
}
