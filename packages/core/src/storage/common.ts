/**
 * Shapes every repository shares: offset paging and field-by-field patches.
 *
 * @module
 */

/** A field-by-field patch: an absent key leaves the stored value unchanged. */
export type Patch<T, K extends keyof T> = Partial<Pick<T, K>>;

/** Offset paging as the API defines it. */
export interface PageRequest {
  readonly limit: number;
  readonly offset: number;
}

/** One page of a list and the total number of matching rows. */
export interface Page<T> {
  readonly items: T[];
  readonly total: number;
}
