/**
 * Scalar conversions between records and rows: every representation choice (times, booleans,
 * bytes, JSON, folded text) lives here and nowhere else. Each repository (repositories/*.ts) maps
 * its own rows with them.
 *
 * @module
 */
// --- scalars ---------------------------------------------------------------------------------

/** pg returns int8 and count(*) as strings; SQLite returns numbers. */
export function toNumber(value: number | string | bigint): number {
  const n = typeof value === "number" ? value : Number(value);
  if (!Number.isSafeInteger(n)) throw new RangeError(`not a safe integer: ${String(value)}`);
  return n;
}

export function toDate(value: number | string | bigint): Date {
  return new Date(toNumber(value));
}

export function toDateOrNull(value: number | string | bigint | null): Date | null {
  return value === null ? null : toDate(value);
}

export function fromDate(date: Date): number {
  const ms = date.getTime();
  if (Number.isNaN(ms)) throw new RangeError("invalid Date");
  return ms;
}

export function fromDateOrNull(date: Date | null): number | null {
  return date === null ? null : fromDate(date);
}

export function toFlag(value: boolean): 0 | 1 {
  return value ? 1 : 0;
}

export function fromFlag(value: number | string | bigint): boolean {
  return Number(value) !== 0;
}

/** Drivers hand out Buffers (and pooled ones): copy into a plain Uint8Array the caller owns. */
export function toBytes(value: Uint8Array): Uint8Array {
  const copy = new Uint8Array(value.byteLength);
  copy.set(value);
  return copy;
}

/** better-sqlite3 and pg both bind Buffers; a view avoids copying. */
export function fromBytes(value: Uint8Array): Uint8Array {
  return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
}

export function toJson(value: unknown): string {
  return JSON.stringify(value);
}

export function toStringArray<T extends string = string>(text: string): T[] {
  return JSON.parse(text) as T[];
}

export function toStringMap(text: string): Record<string, string> {
  return JSON.parse(text) as Record<string, string>;
}

/** The case folding behind every case-insensitive filter: the same on every engine. */
export function fold(text: string): string {
  return text.toLowerCase();
}

/** A LIKE pattern matching `folded` anywhere; `!` escapes wildcards (no backslash quoting to get wrong). */
export function likeContains(folded: string): string {
  return `%${folded.replace(/[!%_]/g, (c) => `!${c}`)}%`;
}
