/**
 * Queries built and compiled once per dialect, then executed with new values. Building a Kysely
 * query tree and compiling it to SQL costs tens of microseconds, more than SQLite takes to run a
 * primary-key lookup; the hot queries of every request (session, membership, authority, ledger
 * and audit writes) skip it, and on a synchronous driver they skip Kysely's executor too
 * (lib/direct.ts: they run on the `QueryRunner`'s `execute`).
 *
 * @module
 */
import type { Compilable, CompiledQuery, Insertable, Kysely, QueryResult } from "kysely";
import type { SqlDialectName } from "../dialect.js";
import type { Database } from "../schema.js";
import type { ExecuteQuery } from "./direct.js";

/** Stands for the i-th argument while the query is compiled. */
class Slot {
  constructor(readonly index: number) {}
}

interface Compiled {
  readonly template: CompiledQuery;
  /** For each parameter: the argument index it takes, or -1 for a constant of the query. */
  readonly slots: readonly number[];
}

/** A query compiled on first use per dialect; `execute` binds the arguments in place of the slots. */
export interface PreparedQuery<Args extends readonly unknown[], Row> {
  /** Runs on `run.execute` (`QueryRunner`), which may skip Kysely's executor (lib/direct.ts). */
  execute(
    run: { readonly execute: ExecuteQuery },
    db: Kysely<Database>,
    dialect: SqlDialectName,
    ...args: Args
  ): Promise<QueryResult<Row>>;
  /** The SQL and parameters, for a connection Kysely does not drive (another thread's). */
  compile(db: Kysely<Database>, dialect: SqlDialectName, ...args: Args): CompiledQuery;
}

function compileOnce(
  build: (db: Kysely<Database>, placeholders: readonly Slot[]) => Compilable<unknown>,
  arity: number,
) {
  const byDialect = new Map<SqlDialectName, Compiled>();
  return (db: Kysely<Database>, dialect: SqlDialectName, args: readonly unknown[]): CompiledQuery => {
    let compiled = byDialect.get(dialect);
    if (compiled === undefined) {
      const placeholders = Array.from({ length: arity }, (_, i) => new Slot(i));
      const template = build(db, placeholders).compile();
      const slots = template.parameters.map((p) => (p instanceof Slot ? p.index : -1));
      if (new Set(slots.filter((s) => s >= 0)).size !== arity) {
        throw new Error("prepare: every argument must appear as a parameter of the query");
      }
      compiled = { template, slots };
      byDialect.set(dialect, compiled);
    }
    const { template, slots } = compiled;
    return { ...template, parameters: slots.map((s, i) => (s < 0 ? template.parameters[i] : args[s])) };
  };
}

/**
 * Declares a prepared query. `build` receives placeholders in place of its arguments: it must use
 * them only as plain values (`where(col, "=", arg)`), never inspect them, and declare every
 * argument as a parameter (its arity is read from `build.length`).
 *
 * @example
 * const findUser = prepare((db, id: string) => db.selectFrom("users").selectAll().where("id", "=", id));
 * const { rows } = await run.read((db) => findUser.execute(run, db, "sqlite", userId));
 */
export function prepare<Args extends readonly unknown[], Row>(
  build: (db: Kysely<Database>, ...args: Args) => Compilable<Row>,
): PreparedQuery<Args, Row> {
  const compile = compileOnce((db, p) => build(db, ...(p as unknown as Args)), build.length - 1);
  return {
    execute: (run, db, dialect, ...args) => run.execute<Row>(db, compile(db, dialect, args)),
    compile: (db, dialect, ...args) => compile(db, dialect, args),
  };
}

/**
 * A prepared `insert into <table> (...) values (...)` that takes the row as an object. It is
 * compiled once per dialect and set of columns, so a row type that gains a column needs no edit
 * here.
 */
export function prepareInsert<T extends keyof Database & string>(
  table: T,
): PreparedQuery<[row: Insertable<Database[T]>], never> {
  const byColumns = new Map<string, ReturnType<typeof compileOnce>>();
  const compile = (db: Kysely<Database>, dialect: SqlDialectName, row: Insertable<Database[T]>) => {
    const columns = Object.keys(row);
    const signature = columns.join(",");
    let compileColumns = byColumns.get(signature);
    if (compileColumns === undefined) {
      compileColumns = compileOnce(
        (kysely, p) =>
          kysely
            .insertInto(table)
            .values(Object.fromEntries(columns.map((c, i) => [c, p[i]])) as Insertable<Database[T]>),
        columns.length,
      );
      byColumns.set(signature, compileColumns);
    }
    const values = row as Record<string, unknown>;
    return compileColumns(
      db,
      dialect,
      columns.map((c) => values[c]),
    );
  };
  return {
    execute: (run, db, dialect, row) => run.execute<never>(db, compile(db, dialect, row)),
    compile,
  };
}
