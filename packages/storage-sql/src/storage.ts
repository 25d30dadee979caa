/**
 * A `Storage` over a Kysely instance: transactions, nesting, error translation.
 *
 * Transactions are explicit (`tx`), but the frame of the running transaction is also tracked with
 * AsyncLocalStorage, for two reasons: a nested `storage.transaction()` must join the outer one,
 * and a call on `storage` (not `tx`) made inside a transaction must not wait for a connection the
 * transaction holds (SQLite has exactly one: that would hang forever). Such a call is a mistake
 * (it reads as if it ran outside the transaction, yet would see and share its writes): with
 * `strictTransactions` (test suites set it) it fails; otherwise it joins the transaction.
 * Tracking makes every promise of the process pay (Node's promise hooks), so it is on only while
 * such a transaction is open; `append` (the signing path) needs none: its batches pass their
 * transaction explicitly.
 *
 * @module
 */
import { AsyncLocalStorage } from "node:async_hooks";
import {
  type AppendUnit,
  type Repositories,
  type Storage,
  type StorageCapabilities,
  UniqueViolationError,
} from "@wap/core/storage";
import { type CompiledQuery, type Kysely, sql, type Transaction } from "kysely";
import type { SqlDialectTraits } from "./dialect.js";
import { type CommitUnits, createAppendBatcher } from "./lib/append-batcher.js";
import { createQueryExecution, type DirectExecutor, throughKysely } from "./lib/direct.js";
import { translateError } from "./lib/errors.js";
import { Mutex } from "./lib/mutex.js";
import { savepointStatements } from "./lib/savepoints.js";
import { auditEventStatements, lockChainHeadStatements } from "./repositories/audit.js";
import { insertIssuedCertificate, issuedCertificateToRow } from "./repositories/certificates.js";
import { createRepositories, type QueryRunner } from "./repositories.js";
import type { Database } from "./schema.js";

/**
 * The statements of one `append` unit, in order, and the audit chains (workspaces) they extend:
 * a batch locks those first, all in one order, so that writers never wait on each other in a
 * circle.
 */
export type AppendStatements = readonly CompiledQuery[] & { readonly chains?: readonly string[] };

export interface SqlStorageOptions {
  /** Owned by the storage from now on: `close()` destroys it. */
  readonly db: Kysely<Database>;
  readonly dialect: SqlDialectTraits;
  readonly capabilities: StorageCapabilities;
  /** Runs after the Kysely instance is destroyed (adapter-specific cleanup). */
  readonly onClose?: () => Promise<void>;
  /**
   * Commits batches of `append` units somewhere other than a transaction on `db` (the SQLite
   * adapter's writer thread, whose commits do not stop the event loop). The adapter closes it in
   * `onClose`.
   */
  readonly commitAppends?: CommitUnits<AppendStatements>;
  /**
   * Runs the prepared queries of the storage's own connection on the driver itself, skipping
   * Kysely's executor, while no transaction holds the connection (lib/direct.ts): for an adapter
   * whose driver is synchronous.
   */
  readonly directExecutor?: DirectExecutor;
  /**
   * Refuse a call on the storage's own repositories made inside one of its transactions (the
   * caller meant `tx`) instead of running it in that transaction. Default off, so production
   * keeps serving; test suites turn it on to catch the mistake.
   */
  readonly strictTransactions?: boolean;
}

/** What a call on the storage itself inside one of its transactions throws in strict mode. */
class TransactionMisuseError extends Error {
  constructor() {
    super(
      "storage: a call on the storage itself inside storage.transaction(); use the transaction's repositories (tx)",
    );
    this.name = "TransactionMisuseError";
  }
}

/** One level of a transaction: the outermost one, or a savepoint inside it. */
interface Frame {
  readonly trx: Transaction<Database>;
  readonly parent: Frame | undefined;
  readonly root: RootState;
  /** Serialises the statements of this level, so savepoints never interleave. */
  readonly lock: Mutex;
  done: boolean;
  /** What runs just before the commit (`QueryRunner.atCommit`); a savepoint's pass to its parent. */
  readonly atCommit: CommitStep[];
}

interface CommitStep {
  readonly key: string;
  readonly run: (db: Kysely<Database>) => Promise<void>;
}

/** Runs the steps ordered by key, each key's in the order they came (Array.sort is stable). */
async function runCommitSteps(trx: Kysely<Database>, steps: readonly CommitStep[]): Promise<void> {
  const ordered = [...steps].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  for (const step of ordered) await step.run(trx);
}

interface RootState {
  savepoints: number;
  /**
   * The repositories handed to every level of the transaction. Built once per transaction (it
   * is a large object): they are bound to the outermost frame, and `frameFor` sends each call to
   * the innermost level still running, so nested levels can share them.
   */
  repositories?: Repositories;
  /** The level running now: nested levels run one at a time, each under its parent's lock. */
  innermost?: Frame;
}

/** The innermost frame of `frame`'s chain that is still running. */
function live(frame: Frame | undefined): Frame | undefined {
  let f = frame;
  while (f?.done) f = f.parent;
  return f;
}

/**
 * Wraps a Kysely instance into a `Storage`. Each adapter calls this with its dialect traits after
 * running the migrations.
 */
export function createSqlStorage(options: SqlStorageOptions): Storage {
  const { db, dialect } = options;
  const execute = createQueryExecution(db, options.directExecutor);
  const current = new AsyncLocalStorage<Frame>();
  const strict = options.strictTransactions ?? false;
  /** Root transactions begun and not yet finished: tracking is on while there are any. */
  let tracked = 0;
  let closed = false;

  const translate = (error: unknown) => translateError(dialect, error);

  /**
   * Which frame a call runs in: the running one of the same transaction, else (a handle used
   * outside the transaction's async context) its innermost level still running.
   */
  function frameFor(bound: Frame | undefined): Frame | undefined {
    const active = live(current.getStore());
    if (bound === undefined) {
      if (active !== undefined && strict) throw new TransactionMisuseError();
      return active;
    }
    if (active !== undefined && active.root === bound.root) return active;
    const frame = live(bound.root.innermost ?? bound);
    if (frame === undefined) throw new Error("storage: this transaction has already finished");
    return frame;
  }

  async function withSavepoint<T>(frame: Frame, fn: () => Promise<T>): Promise<T> {
    const name = `wap_sp_${++frame.root.savepoints}`;
    await sql`savepoint ${sql.id(name)}`.execute(frame.trx);
    let result: T;
    try {
      result = await fn();
    } catch (error) {
      await sql`rollback to savepoint ${sql.id(name)}`.execute(frame.trx);
      throw error;
    }
    await sql`release savepoint ${sql.id(name)}`.execute(frame.trx);
    return result;
  }

  function runnerFor(bound: Frame | undefined): QueryRunner {
    const exec = async <T>(write: boolean, fn: (db: Kysely<Database>) => Promise<T>): Promise<T> => {
      if (closed) throw new Error("storage: closed");
      try {
        const frame = frameFor(bound);
        if (frame === undefined) return await fn(db);
        return await frame.lock.run(() =>
          write && dialect.failedStatementAbortsTransaction
            ? withSavepoint(frame, () => fn(frame.trx))
            : fn(frame.trx),
        );
      } catch (error) {
        throw translate(error);
      }
    };
    return {
      read: (fn) => exec(false, fn),
      write: (fn) => exec(true, fn),
      execute,
      async atCommit(key, run) {
        if (closed) throw new Error("storage: closed");
        const frame = frameFor(bound);
        if (frame !== undefined) {
          frame.atCommit.push({ key, run });
          return;
        }
        try {
          await db.transaction().execute((trx) => run(trx));
        } catch (error) {
          throw translate(error);
        }
      },
    };
  }

  const rootRepositories = createRepositories(runnerFor(undefined), dialect);

  function appendStatements(unit: AppendUnit): AppendStatements {
    const statements: CompiledQuery[] = [];
    for (const entry of unit.issuedCertificates ?? []) {
      statements.push(insertIssuedCertificate.compile(db, dialect.name, issuedCertificateToRow(entry)));
    }
    const chains: string[] = [];
    for (const event of unit.auditEvents ?? []) {
      statements.push(...auditEventStatements(db, dialect.name, event));
      if (event.workspaceId !== null) chains.push(event.workspaceId);
    }
    return chains.length === 0 ? statements : Object.assign(statements, { chains });
  }

  /**
   * The default committer: one transaction on `db` for the batch, its handle passed explicitly
   * (no tracking). Units go in together, without savepoints (each costs a round trip, and on
   * SQLite a statement journal); a unit that breaks a uniqueness rule undoes the batch, which is
   * then written again with each unit in a savepoint of its own, so that it fails alone.
   */
  async function commitOnDb(units: readonly AppendStatements[]): Promise<unknown[]> {
    try {
      await db.transaction().execute(async (trx) => {
        for (const statement of lockChainHeadStatements(
          db,
          dialect.name,
          units.flatMap((u) => u.chains ?? []),
        )) {
          await trx.executeQuery(statement);
        }
        for (const statements of units) for (const statement of statements) await trx.executeQuery(statement);
      });
      return units.map(() => undefined);
    } catch (error) {
      const translated = translate(error);
      if (!(translated instanceof UniqueViolationError)) throw translated;
      return units.length === 1 ? [translated] : commitApart(units);
    }
  }

  async function commitApart(units: readonly AppendStatements[]): Promise<unknown[]> {
    const outcomes: unknown[] = [];
    await db.transaction().execute(async (trx) => {
      for (const statement of lockChainHeadStatements(
        db,
        dialect.name,
        units.flatMap((u) => u.chains ?? []),
      )) {
        await trx.executeQuery(statement);
      }
      for (const statements of units) {
        await trx.executeQuery(savepointStatements.begin);
        try {
          for (const statement of statements) await trx.executeQuery(statement);
          await trx.executeQuery(savepointStatements.release);
          outcomes.push(undefined);
        } catch (error) {
          await trx.executeQuery(savepointStatements.rollback);
          await trx.executeQuery(savepointStatements.release);
          outcomes.push(translate(error));
        }
      }
    });
    return outcomes;
  }

  const commitAppends = options.commitAppends ?? commitOnDb;
  const appends = createAppendBatcher<AppendStatements>(async (units) => {
    try {
      return (await commitAppends(units)).map((outcome) =>
        outcome === undefined ? undefined : translate(outcome),
      );
    } catch (error) {
      throw translate(error);
    }
  });

  function rootFrame(frame: Frame): Frame {
    let f = frame;
    while (f.parent !== undefined) f = f.parent;
    return f;
  }

  function repositoriesOf(root: Frame): Repositories {
    root.root.repositories ??= createRepositories(runnerFor(root), dialect);
    return root.root.repositories;
  }

  async function nested<T>(parent: Frame, fn: (tx: Repositories) => Promise<T>): Promise<T> {
    // The parent's lock is held for the whole nested run: statements of the parent level issued
    // meanwhile wait, so a rollback to this savepoint can only undo the nested work.
    return parent.lock.run(async () => {
      const child: Frame = {
        trx: parent.trx,
        parent,
        root: parent.root,
        lock: new Mutex(),
        done: false,
        atCommit: [],
      };
      parent.root.innermost = child;
      try {
        const result = await withSavepointTranslated(child, () =>
          current.run(child, () => fn(repositoriesOf(rootFrame(child)))),
        );
        parent.atCommit.push(...child.atCommit);
        return result;
      } finally {
        child.done = true;
        parent.root.innermost = parent;
      }
    });
  }

  /** Savepoint statements' own failures are driver errors; the callback's errors pass through. */
  async function withSavepointTranslated<T>(frame: Frame, fn: () => Promise<T>): Promise<T> {
    let failure: { error: unknown } | undefined;
    try {
      return await withSavepoint(frame, async () => {
        try {
          return await fn();
        } catch (error) {
          failure = { error };
          throw error;
        }
      });
    } catch (error) {
      if (failure !== undefined && failure.error === error) throw error;
      throw translate(error);
    }
  }

  return {
    ...rootRepositories,
    capabilities: Object.freeze({ ...options.capabilities }),

    async transaction<T>(fn: (tx: Repositories) => Promise<T>): Promise<T> {
      if (closed) throw new Error("storage: closed");
      const parent = live(current.getStore());
      if (parent !== undefined) return nested(parent, fn);

      let failure: { error: unknown } | undefined;
      tracked++;
      try {
        return await db.transaction().execute(async (trx) => {
          const frame: Frame = {
            trx,
            parent: undefined,
            root: { savepoints: 0 },
            lock: new Mutex(),
            done: false,
            atCommit: [],
          };
          let result: T;
          try {
            result = await current.run(frame, () => fn(repositoriesOf(frame)));
          } catch (error) {
            failure = { error };
            throw error;
          } finally {
            frame.done = true;
          }
          await runCommitSteps(trx, frame.atCommit);
          return result;
        });
      } catch (error) {
        // The callback's own error is rethrown untouched; BEGIN/COMMIT/ROLLBACK failures are ours.
        if (failure !== undefined && failure.error === error) throw error;
        throw translate(error);
      } finally {
        // No frame is live any more: every store still reachable belongs to a finished one.
        if (--tracked === 0) current.disable();
      }
    },

    append(unit) {
      if (closed) return Promise.reject(new Error("storage: closed"));
      // Its batch waits for the connection a caller's transaction holds (SQLite's only one).
      if (live(current.getStore()) !== undefined) {
        return Promise.reject(
          new Error("storage: append commits on its own; call it outside storage.transaction()"),
        );
      }
      let statements: AppendStatements;
      try {
        statements = appendStatements(unit);
      } catch (error) {
        return Promise.reject(error);
      }
      return appends.append(statements);
    },

    async ping() {
      if (closed) throw new Error("storage: closed");
      try {
        await sql`select 1`.execute(db);
      } catch (error) {
        throw translate(error);
      }
    },

    async close() {
      if (closed) return;
      closed = true;
      // Appends already accepted are committed (or refused) before the connections go.
      await appends.drain();
      await db.destroy();
      await options.onClose?.();
    },
  };
}

/**
 * The repositories over a Kysely instance or transaction, without transaction support: for
 * adapter authors who manage transactions themselves.
 */
export function createSqlRepositories(db: Kysely<Database>, dialect: SqlDialectTraits): Repositories {
  const exec = async <T>(fn: (db: Kysely<Database>) => Promise<T>): Promise<T> => {
    try {
      return await fn(db);
    } catch (error) {
      throw translateError(dialect, error);
    }
  };
  // The caller's transaction is the one to commit in: steps for its commit run at once.
  return createRepositories(
    {
      read: exec,
      write: exec,
      execute: throughKysely,
      atCommit: (_key, step) => exec(() => step(db)),
    },
    dialect,
  );
}
