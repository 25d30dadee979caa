/**
 * The savepoint that isolates one unit of a group commit: units run one after another, so one
 * name serves them all. Compiled once: these run for every unit of every batch.
 *
 * @module
 */
import { CompiledQuery } from "kysely";

export const savepointName = "wap_append";

export const savepointStatements = {
  begin: CompiledQuery.raw(`savepoint ${savepointName}`),
  release: CompiledQuery.raw(`release savepoint ${savepointName}`),
  rollback: CompiledQuery.raw(`rollback to savepoint ${savepointName}`),
} as const;
