// @ts-check
/**
 * The writer thread's program (append-writer.ts starts it): a connection of its own to the
 * database file, committing the batches of `Storage.append` it is sent.
 *
 * A worker thread runs a file as Node finds it, from the sources (test runners transform only
 * the modules of the main thread) as from the built package: this one is plain JavaScript, its
 * types checked by tsc from the annotations (`@ts-check`), linted with the rest, and built as an
 * entry of the package beside index.js.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { parentPort, workerData } from "node:worker_threads";
import Database from "better-sqlite3";

/**
 * @typedef {import("./writer-protocol.js").WriterData} WriterData
 * @typedef {import("./writer-protocol.js").WriterRequest} WriterRequest
 * @typedef {import("./writer-protocol.js").WriterReply} WriterReply
 * @typedef {import("./writer-protocol.js").ReportedError} ReportedError
 * @typedef {import("./writer-protocol.js").EncodedUnit} EncodedUnit
 */

const port = parentPort;
if (port === null) throw new Error("writer-thread.js runs as a worker thread (append-writer.ts)");
const data = /** @type {WriterData} */ (workerData);

const db = new Database(data.filename, { fileMustExist: true });
db.pragma("journal_mode = WAL");
db.pragma("synchronous = FULL");
db.pragma("foreign_keys = ON");
db.pragma(`busy_timeout = ${Math.trunc(data.busyTimeoutMs)}`);
// The audit chain's step: SHA-256 of the previous hash, the position (uint64, big-endian) and the
// entry's content, as the main connection's (@wap/core's chainHash) computes it.
db.function(
  "wap_chain_hash",
  { deterministic: true },
  /** @type {(previous: Uint8Array, position: number | bigint, content: Uint8Array) => Buffer} */
  (previous, position, content) => {
    const at = Buffer.alloc(8);
    at.writeBigUInt64BE(BigInt(position));
    return createHash("sha256").update(previous).update(at).update(content).digest();
  },
);

/** @type {Map<string, import("better-sqlite3").Statement>} */
const statements = new Map();

/** @param {string} source */
function statement(source) {
  let prepared = statements.get(source);
  if (prepared === undefined) {
    prepared = db.prepare(source);
    statements.set(source, prepared);
  }
  return prepared;
}

/**
 * What the main thread needs to classify a driver error as the dialect would the driver's own.
 * @param {unknown} error
 * @returns {ReportedError}
 */
function report(error) {
  const e = error instanceof Error ? error : new Error(String(error));
  const code = /** @type {{ code?: unknown }} */ (e).code;
  return { name: e.name, message: e.message, code: typeof code === "string" ? code : undefined };
}

/** The SQL of each statement crosses once; units then name it by number. @type {string[]} */
const texts = [];

/** @param {EncodedUnit} unit */
function run(unit) {
  for (let i = 0; i < unit.length; i += 2) {
    const text = texts[/** @type {number} */ (unit[i])];
    if (text === undefined) throw new Error("writer thread: a statement number it was never sent");
    statement(text).run(unit[i + 1]);
  }
}

/**
 * The usual case: every unit of the batch in one transaction, no savepoints (each costs a
 * statement journal). A unit that breaks a constraint (a serial taken) undoes the batch, which
 * is then written again by `commitApart`.
 * @param {readonly EncodedUnit[]} units
 */
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

/**
 * Each unit in a savepoint of its own, so that a unit breaking a constraint fails alone.
 * @param {readonly EncodedUnit[]} units
 * @returns {Array<ReportedError | null>}
 */
function commitApart(units) {
  /** @type {Array<ReportedError | null>} */
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

/** @param {unknown} error */
function isConstraint(error) {
  const code = /** @type {{ code?: unknown } | null | undefined} */ (error)?.code;
  return typeof code === "string" && code.startsWith("SQLITE_CONSTRAINT");
}

/**
 * Commits one batch: its outcome per unit (null: written), or why the whole batch failed.
 * @param {Exclude<WriterRequest, "close">} request
 * @returns {WriterReply}
 */
function commitBatch({ id, units, newTexts }) {
  if (newTexts !== undefined) texts.push(...newTexts);
  try {
    try {
      commitTogether(units);
      return { id, outcomes: units.map(() => null) };
    } catch (error) {
      if (!isConstraint(error)) throw error;
      return { id, outcomes: units.length === 1 ? [report(error)] : commitApart(units) };
    }
  } catch (error) {
    return { id, failure: report(error) };
  }
}

port.on("message", (/** @type {WriterRequest} */ request) => {
  if (request === "close") {
    db.close();
    port.close();
    return;
  }
  port.postMessage(commitBatch(request));
});
