/**
 * The `wap-server` command: starts the server with settings from `WAP_*` variables and flags (see --help),
 * and shuts it down gracefully on SIGINT/SIGTERM.
 *
 * @module
 */
import { ConfigError, helpText, parseConfig } from "./config.js";
import { createJsonLogger } from "./logger.js";
import { createServer } from "./server.js";

/** Runs the command; resolves to the process exit code. */
export async function main(): Promise<number> {
  let parsed: ReturnType<typeof parseConfig>;
  try {
    parsed = parseConfig(process.argv.slice(2), process.env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`wap-server: ${error.message}\n`);
    return 2;
  }
  if (parsed.help) {
    process.stdout.write(helpText());
    return 0;
  }
  const logger = createJsonLogger(parsed.config.logLevel);
  let server: Awaited<ReturnType<typeof createServer>>;
  try {
    server = await createServer({ ...parsed.config, logger });
  } catch (error) {
    const message = error instanceof ConfigError ? error.message : String(error);
    logger.error("failed to start", { error: message });
    return 1;
  }
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      logger.info("signal received", { signal });
      // A second signal means "now".
      process.once("SIGINT", () => process.exit(130));
      process.once("SIGTERM", () => process.exit(143));
      server.close().then(resolve, (error: unknown) => {
        logger.error("shutdown failed", { error: String(error) });
        resolve();
      });
    };
    process.once("SIGINT", () => stop("SIGINT"));
    process.once("SIGTERM", () => stop("SIGTERM"));
  });
  return 0;
}
