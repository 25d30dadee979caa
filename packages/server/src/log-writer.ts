/**
 * Where log lines bound for stderr go. They are gathered for one turn of the event loop and
 * handed, as one string, to a thread of their own that writes them to file descriptor 2: the
 * event loop never waits on the write (a file on a busy disk, a pipe its reader is slow to
 * drain). At every request at `info`, that wait was the event loop's.
 *
 * Nothing handed over is lost on the way out: at exit (a return from main, `process.exit`, an
 * uncaught exception, a graceful SIGTERM/SIGINT) and after each `error` line, the event loop
 * waits, up to {@link flushWaitMs}, until the thread has written every batch handed to it.
 * SIGKILL and a crash of the process itself lose what the thread had not written yet, as they
 * would lose a line still in a pipe's buffer. Where no thread can be started, lines are written
 * from the event loop as before.
 *
 * @module
 */
import { writeSync } from "node:fs";
import { Worker } from "node:worker_threads";

/**
 * How long the exit (or an error line) waits for the writer thread to catch up: long enough for a
 * slow reader of a pipe to drain megabytes of backlog, short enough that a reader that stopped
 * reading cannot hold the process forever.
 */
const flushWaitMs = 10_000;

/**
 * Writes `text` to stderr whole, however many writes a pipe or a terminal takes (a full
 * non-blocking pipe says EAGAIN: wait a millisecond and go on). The writer thread runs this same
 * function, from its source text (so it names nothing from outside but its arguments).
 */
function writeWhole(text: string, write: typeof writeSync): void {
  const pause = new Int32Array(new SharedArrayBuffer(4));
  const bytes = Buffer.from(text);
  let offset = 0;
  while (offset < bytes.length) {
    try {
      offset += write(2, bytes, offset);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EAGAIN") return;
      Atomics.wait(pause, 0, 0, 1);
    }
  }
}

// The thread: it first claims the writing (state 0 -> 1) unless the process has already taken it
// back at exit (state 2); then it writes each batch whole and counts it in the shared counter
// the event loop waits on.
const writerSource = `
const { parentPort, workerData } = require("node:worker_threads");
const { writeSync } = require("node:fs");
const shared = new Int32Array(workerData.shared);
const writeWhole = ${writeWhole.toString()};
if (Atomics.compareExchange(shared, 1, 0, 1) === 2) parentPort.close();
else parentPort.on("message", (chunk) => {
  writeWhole(chunk, writeSync);
  Atomics.add(shared, 0, 1);
  Atomics.notify(shared, 0);
});
`;

/**
 * Shared with the thread: [0] batches it has written; [1] who writes: 0 not decided yet (the
 * thread is starting), 1 the thread, 2 this thread (the process ended before the writer started).
 */
const shared = new Int32Array(new SharedArrayBuffer(8));
const writtenSlot = 0;
const stateSlot = 1;
let handedOver = 0;
/** Batches handed to a thread that has not started yet: written here if it never does. */
let unclaimed: string[] = [];
let thread: Worker | null | undefined;
let pending = "";
let flushScheduled = false;

/** Queues `line` (newline included) for stderr; it leaves at the end of this turn of the loop. */
export function writeLogLine(line: string): void {
  pending += line;
  if (flushScheduled) return;
  flushScheduled = true;
  setImmediate(flush);
}

/** Hands what is gathered to the writer thread now. */
function flush(): void {
  flushScheduled = false;
  if (pending === "") return;
  const chunk = pending;
  pending = "";
  const writer = writerThread();
  if (writer === null) {
    writeWhole(chunk, writeSync);
    return;
  }
  writer.postMessage(chunk);
  handedOver++;
  if (Atomics.load(shared, stateSlot) === 0) unclaimed.push(chunk);
  else unclaimed = [];
}

/** Starts the writer thread now, so that it is up before the first lines have to leave. */
export function startLogWriter(): void {
  writerThread();
}

/**
 * Hands over what is gathered and waits until the thread has written all of it (or
 * {@link flushWaitMs} went by): before the process ends, and after an error line.
 */
export function flushLogLines(): void {
  flush();
  if (!thread) return;
  if (Atomics.compareExchange(shared, stateSlot, 0, 2) !== 1) {
    // The thread never started (it needs turns of this loop that will not come): these lines
    // are written here, and the thread, should it start, writes nothing.
    for (const chunk of unclaimed) writeWhole(chunk, writeSync);
    unclaimed = [];
    thread = null;
    return;
  }
  const deadline = Date.now() + flushWaitMs;
  for (
    let done = Atomics.load(shared, writtenSlot);
    done < handedOver;
    done = Atomics.load(shared, writtenSlot)
  ) {
    const left = deadline - Date.now();
    if (left <= 0) return;
    Atomics.wait(shared, writtenSlot, done, left);
  }
}

function writerThread(): Worker | null {
  if (thread !== undefined) return thread;
  try {
    thread = new Worker(writerSource, { eval: true, workerData: { shared: shared.buffer } });
    // It never keeps the process alive: the exit waits for it instead.
    thread.unref();
    thread.on("error", () => {
      thread = null;
    });
  } catch {
    thread = null;
  }
  return thread;
}

process.once("exit", flushLogLines);
