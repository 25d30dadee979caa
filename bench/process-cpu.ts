/**
 * CPU time of a process or of one of its threads, from /proc (Linux).
 *
 * @module
 */
import { readFileSync } from "node:fs";

/**
 * CPU time in µs of process `pid` (every thread) or of its thread `thread` (a process's main
 * thread has the process's id). Throws where /proc is missing.
 */
export function cpuUs(pid: number, thread?: number): number {
  const stat = readFileSync(
    thread === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${thread}/stat`,
    "utf8",
  );
  // Fields after the parenthesised command name; utime and stime are the 14th and 15th.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100; // USER_HZ is 100 on Linux
}
