/**
 * JSON-lines logging to stderr. Callers pass plain fields; nothing here knows about tokens, so
 * callers never pass headers, cookies, bodies or keys.
 *
 * At `info` every request is logged, so a line must be cheap: it is written by hand around one
 * `JSON.stringify` of the fields, and lines to stderr are gathered once per turn of the event
 * loop and written by a thread of their own (log-writer.ts), flushed at exit.
 *
 * @module
 */
import { flushLogLines, startLogWriter, writeLogLine } from "./log-writer.js";

export const logLevels = ["debug", "info", "warn", "error", "silent"] as const;
export type LogLevel = (typeof logLevels)[number];

export type LogFields = Readonly<Record<string, unknown>>;

export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  /** False when lines of `level` are dropped, so callers can skip gathering their fields. */
  enabled?(level: Exclude<LogLevel, "silent">): boolean;
}

/**
 * A logger writing one JSON object per line (`time`, `level`, `msg`, then the fields). With
 * `write`, each line is handed over as it is made; without, lines go to stderr in batches.
 */
export function createJsonLogger(level: LogLevel = "info", write?: (line: string) => void): Logger {
  const threshold = logLevels.indexOf(level);
  const out = write ?? writeLogLine;
  if (write === undefined && level !== "silent") startLogWriter();
  const enabled = (at: Exclude<LogLevel, "silent">) => logLevels.indexOf(at) >= threshold;
  const log = (at: Exclude<LogLevel, "silent">) => {
    if (!enabled(at)) return ignore;
    // An error goes out at once, with whatever is gathered before it: the process may be about to die.
    const urgent = at === "error" && write === undefined;
    return (message: string, fields?: LogFields) => {
      out(formatLine(at, message, fields));
      if (urgent) flushLogLines();
    };
  };
  return { debug: log("debug"), info: log("info"), warn: log("warn"), error: log("error"), enabled };
}

/** Discards everything (embedding and tests that do not care). */
export const silentLogger: Logger = createJsonLogger("silent");

/**
 * A long-lived stream (an event subscription, a terminal) could not check again that its caller
 * still has access: it goes on, and the next change in its workspace checks again.
 */
export const streamCheckFailed = "a stream's access check failed; the next change checks again";

function ignore(): void {}

function formatLine(level: string, message: string, fields: LogFields | undefined): string {
  const time = new Date().toISOString();
  // Fields named like the fixed keys replace them, as a spread would.
  if (fields !== undefined && ("time" in fields || "level" in fields || "msg" in fields)) {
    return `${JSON.stringify({ time, level, msg: message, ...fields })}\n`;
  }
  const head = `{"time":"${time}","level":"${level}","msg":${JSON.stringify(message)}`;
  const rest = fields === undefined ? "{}" : JSON.stringify(fields);
  return rest === "{}" ? `${head}}\n` : `${head},${rest.slice(1)}\n`;
}

/** A logger adding `fields` to every line (e.g. which worker process wrote it). */
export function withFields(logger: Logger, fields: LogFields): Logger {
  const log =
    (at: Exclude<LogLevel, "silent">) =>
    (message: string, more?: LogFields): void =>
      logger[at](message, more === undefined ? fields : { ...fields, ...more });
  return {
    debug: log("debug"),
    info: log("info"),
    warn: log("warn"),
    error: log("error"),
    ...(logger.enabled && { enabled: logger.enabled.bind(logger) }),
  };
}
