/**
 * JSON-lines logging to stderr. Callers pass plain fields; nothing here knows about tokens, so
 * callers never pass headers, cookies, bodies or keys.
 *
 * @module
 */

export const logLevels = ["debug", "info", "warn", "error", "silent"] as const;
export type LogLevel = (typeof logLevels)[number];

export type LogFields = Readonly<Record<string, unknown>>;

export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

/** A logger writing one JSON object per line (`time`, `level`, `msg`, then the fields). */
export function createJsonLogger(
  level: LogLevel = "info",
  write: (line: string) => void = (line) => process.stderr.write(line),
): Logger {
  const threshold = logLevels.indexOf(level);
  const log = (at: Exclude<LogLevel, "silent">) => (message: string, fields?: LogFields) => {
    if (logLevels.indexOf(at) < threshold) return;
    write(`${JSON.stringify({ time: new Date().toISOString(), level: at, msg: message, ...fields })}\n`);
  };
  return { debug: log("debug"), info: log("info"), warn: log("warn"), error: log("error") };
}

/** Discards everything (embedding and tests that do not care). */
export const silentLogger: Logger = createJsonLogger("silent");
