/**
 * The writer thread of `Storage.append`. With synchronous=FULL every commit waits for an fsync,
 * and better-sqlite3 waits on the thread that commits: on the event loop, each group commit would
 * stop every request for as long as the disk takes (milliseconds). The batches of `append` are
 * written instead by a worker thread with a connection of its own to the same file (WAL allows
 * one writer at a time and readers alongside); the event loop only hands rows over and hears back.
 *
 * Other transactions stay on the main connection and begin with BEGIN IMMEDIATE (see
 * sqlite-storage.ts), so that a writer thread commit between their read and their write never
 * fails them: they wait for the write lock (busy_timeout) instead.
 *
 * @module
 */
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import { StorageUnavailableError } from "@wap/core/storage";
import type { AppendStatements } from "@wap/storage-sql";

/** A driver error as the thread reports it: what the dialect needs to classify it. */
interface ReportedError {
  readonly name: string;
  readonly message: string;
  readonly code: string | undefined;
}

type Reply =
  | { readonly id: number; readonly outcomes: ReadonlyArray<ReportedError | null> }
  | { readonly id: number; readonly failure: ReportedError };

export interface AppendWriter {
  /** Commits the units in one transaction of the writer thread; see `CommitUnits`. */
  commit(units: readonly AppendStatements[]): Promise<unknown[]>;
  /** Lets the thread finish its batch, then closes its connection and ends it. */
  close(): Promise<void>;
}

/**
 * The thread's program, as source text run with `eval`: it needs no file next to the module, and
 * the same text runs from the TypeScript sources, the built package and under test runners (which
 * would rewrite a function's own text). `workerData` names the driver module and the database.
 */
const writerThreadSource = `
"use strict";
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.driver);
const db = new Database(workerData.filename, { fileMustExist: true });
db.pragma("journal_mode = WAL");
db.pragma("synchronous = FULL");
db.pragma("foreign_keys = ON");
db.pragma("busy_timeout = " + workerData.busyTimeoutMs);
// The audit chain's step: SHA-256 of the previous hash, the position (uint64, big-endian) and the
// entry's content, as the main connection's (@wap/core's chainHash) computes it.
const { createHash } = require("node:crypto");
db.function("wap_chain_hash", { deterministic: true }, (previous, position, content) => {
  const at = Buffer.alloc(8);
  at.writeBigUInt64BE(BigInt(position));
  return createHash("sha256").update(previous).update(at).update(content).digest();
});
const statements = new Map();
function statement(source) {
  let prepared = statements.get(source);
  if (prepared === undefined) {
    prepared = db.prepare(source);
    statements.set(source, prepared);
  }
  return prepared;
}
function report(error) {
  const e = error instanceof Error ? error : new Error(String(error));
  return { name: e.name, message: e.message, code: typeof e.code === "string" ? e.code : undefined };
}
// The SQL of each statement crosses once; units then name it by number: [number, parameters, ...].
const texts = [];
function run(unit) {
  for (let i = 0; i < unit.length; i += 2) statement(texts[unit[i]]).run(unit[i + 1]);
}
// The usual case: every unit of the batch in one transaction, no savepoints (each costs a
// statement journal). A unit that breaks a constraint (a serial taken) undoes the batch, which
// is then written again with each unit in a savepoint of its own, so that it fails alone.
function commitTogether(units) {
  statement("begin immediate").run();
  try {
    for (const unit of units) run(unit);
    statement("commit").run();
  } catch (error) {
    if (db.inTransaction) statement("rollback").run();
    throw error;
  }
}
function commitApart(units) {
  const outcomes = [];
  statement("begin immediate").run();
  try {
    for (const unit of units) {
      statement("savepoint wap_append").run();
      try {
        run(unit);
        statement("release savepoint wap_append").run();
        outcomes.push(null);
      } catch (error) {
        statement("rollback to savepoint wap_append").run();
        statement("release savepoint wap_append").run();
        outcomes.push(report(error));
      }
    }
    statement("commit").run();
  } catch (error) {
    if (db.inTransaction) statement("rollback").run();
    throw error;
  }
  return outcomes;
}
const isConstraint = (error) => typeof error?.code === "string" && error.code.startsWith("SQLITE_CONSTRAINT");
parentPort.on("message", (message) => {
  if (message === "close") {
    db.close();
    parentPort.close();
    return;
  }
  const { id, units, newTexts } = message;
  if (newTexts !== undefined) texts.push(...newTexts);
  try {
    let outcomes;
    try {
      commitTogether(units);
      outcomes = units.map(() => null);
    } catch (error) {
      if (!isConstraint(error)) throw error;
      outcomes = units.length === 1 ? [report(error)] : commitApart(units);
    }
    parentPort.postMessage({ id, outcomes });
  } catch (error) {
    parentPort.postMessage({ id, failure: report(error) });
  }
});

`;

/** An Error the dialect classifies as it would the driver's own. */
function revive(reported: ReportedError): Error {
  const error = new Error(reported.message) as Error & { code?: string };
  error.name = reported.name;
  if (reported.code !== undefined) error.code = reported.code;
  return error;
}

/**
 * Starts the writer of `filename` on first use. A thread that dies fails its batch (the commit
 * may or may not have happened: the caller hears of a failure, never of a false success) and is
 * started again for the next one.
 */
export function createAppendWriter(options: {
  readonly filename: string;
  readonly busyTimeoutMs: number;
}): AppendWriter {
  const driver = createRequire(import.meta.url).resolve("better-sqlite3");
  let worker: Worker | undefined;
  /** The statement numbers the running thread knows. */
  let textIds = new Map<string, number>();
  let nextId = 1;
  const waiting = new Map<
    number,
    { resolve: (outcomes: unknown[]) => void; reject: (error: unknown) => void }
  >();

  function failAll(error: unknown) {
    for (const pending of waiting.values()) pending.reject(error);
    waiting.clear();
  }

  function start(): Worker {
    const thread = new Worker(writerThreadSource, {
      eval: true,
      // Plain CommonJS whatever the process runs with (`--input-type=module` would make it ESM).
      execArgv: [],
      workerData: { driver, filename: options.filename, busyTimeoutMs: options.busyTimeoutMs },
    });
    thread.on("message", (reply: Reply) => {
      const pending = waiting.get(reply.id);
      if (pending === undefined) return;
      waiting.delete(reply.id);
      if (waiting.size === 0) thread.unref();
      if ("failure" in reply) pending.reject(revive(reply.failure));
      else pending.resolve(reply.outcomes.map((outcome) => (outcome === null ? undefined : revive(outcome))));
    });
    thread.on("error", (error) => {
      if (worker === thread) worker = undefined;
      failAll(
        new StorageUnavailableError(`the SQLite writer thread failed: ${error.message}`, { cause: error }),
      );
    });
    thread.on("exit", () => {
      if (worker === thread) worker = undefined;
      failAll(new StorageUnavailableError("the SQLite writer thread stopped"));
    });
    thread.unref();
    return thread;
  }

  return {
    commit(units) {
      if (worker === undefined) {
        worker = start();
        textIds = new Map();
      }
      const thread = worker;
      const id = nextId++;
      // The SQL texts repeat: copying each once, not with every unit, halves what crosses.
      const newTexts: string[] = [];
      const encoded = units.map((unit) => {
        const flat: unknown[] = [];
        for (const query of unit) {
          let textId = textIds.get(query.sql);
          if (textId === undefined) {
            textId = textIds.size;
            textIds.set(query.sql, textId);
            newTexts.push(query.sql);
          }
          flat.push(textId, query.parameters);
        }
        return flat;
      });
      return new Promise<unknown[]>((resolve, reject) => {
        waiting.set(id, { resolve, reject });
        // Held open while a batch is out, so the process waits for its answer.
        thread.ref();
        thread.postMessage({ id, units: encoded, ...(newTexts.length > 0 && { newTexts }) });
      });
    },
    async close() {
      const thread = worker;
      worker = undefined;
      if (thread === undefined) return;
      const exited = new Promise<void>((resolve) => thread.once("exit", () => resolve()));
      // Referenced until it has gone: a process closing its storage last waits for the thread.
      thread.ref();
      thread.postMessage("close");
      await exited;
    },
  };
}
