/**
 * The last resort of the `wap-server` process: a rejection nobody handled. Every stream and
 * background task handles its own failures (logged with its request id, and answered); one that
 * escapes anyway is a bug, logged here with its stack, while the server keeps serving everyone
 * else (Node's default would end the process, and with it every daemon's control stream).
 *
 * @module
 */
import { describeFault } from "./errors.js";
import { createJsonLogger, type Logger } from "./logger.js";

/** Logs every unhandled rejection of this process as an `error` line. */
export function logUnhandledRejections(logger: Logger = createJsonLogger("error")): void {
  process.on("unhandledRejection", (reason) => {
    logger.error("unhandled rejection", { error: describeFault(reason) });
  });
}
