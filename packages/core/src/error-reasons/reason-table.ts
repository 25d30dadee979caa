/**
 * The shape of an area's table of error reasons: each reason names the code it is sent with and
 * says, in one line, when it happens and what the caller should do.
 *
 * @module
 */
import type { ErrorCode } from "../errors.js";

/** One declared reason. `code` is a list for the few reasons sent with more than one code. */
export interface ReasonEntry {
  readonly code: ErrorCode | readonly ErrorCode[];
  readonly description: string;
}

/** An area's reasons, by name (`CA_NAME_TAKEN`). */
export type ReasonTable = Readonly<Record<string, ReasonEntry>>;

/** The codes a reason is sent with. */
export function codesOf(entry: ReasonEntry): readonly ErrorCode[] {
  return typeof entry.code === "string" ? [entry.code] : entry.code;
}
