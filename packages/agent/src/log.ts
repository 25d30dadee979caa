/**
 * The agent's log: one JSON object per line (`time`, `level`, `msg`, then fields), on stdout,
 * where journald or any collector picks it up. Nothing secret is logged: no token, no key.
 *
 * @module
 */

export type LogLevel = "debug" | "info" | "warn" | "error";

export interface LogEntry {
  readonly level: LogLevel;
  readonly msg: string;
  readonly [field: string]: unknown;
}

export type Logger = (entry: LogEntry) => void;

export function jsonLineLogger(write: (line: string) => void = (line) => process.stdout.write(line)): Logger {
  return (entry) => write(`${JSON.stringify({ time: new Date().toISOString(), ...entry })}\n`);
}

export const silentLogger: Logger = () => {};
