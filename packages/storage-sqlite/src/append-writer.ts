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
import { Worker } from "node:worker_threads";
import { StorageUnavailableError } from "@wap/core/storage";
import type { AppendStatements } from "@wap/storage-sql";
import type { ReportedError, WriterData, WriterReply, WriterRequest } from "./writer-protocol.js";

export interface AppendWriter {
  /** Commits the units in one transaction of the writer thread; see `CommitUnits`. */
  commit(units: readonly AppendStatements[]): Promise<unknown[]>;
  /** Lets the thread finish its batch, then closes its connection and ends it. */
  close(): Promise<void>;
}

/**
 * The thread's program, beside this module in the sources and in the built package alike
 * (`tsup.config.ts` builds it as an entry of its own).
 */
const writerThread = new URL("./writer-thread.js", import.meta.url);

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
    const workerData: WriterData = { filename: options.filename, busyTimeoutMs: options.busyTimeoutMs };
    // No options of the process (loaders of a development run): the thread needs none.
    const thread = new Worker(writerThread, { execArgv: [], workerData });
    thread.on("message", (reply: WriterReply) => {
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
        const request: WriterRequest = { id, units: encoded, ...(newTexts.length > 0 && { newTexts }) };
        thread.postMessage(request);
      });
    },
    async close() {
      const thread = worker;
      worker = undefined;
      if (thread === undefined) return;
      const exited = new Promise<void>((resolve) => thread.once("exit", () => resolve()));
      // Referenced until it has gone: a process closing its storage last waits for the thread.
      thread.ref();
      thread.postMessage("close" satisfies WriterRequest);
      await exited;
    },
  };
}
