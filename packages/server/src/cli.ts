/**
 * The `wap-server` command: serves with settings from `WAP_*` variables and flags (see --help)
 * and shuts down gracefully on SIGINT/SIGTERM; `migrate` brings the database schema up to date
 * and exits; `master-key` prints a new master key.
 *
 * @module
 */

import cluster from "node:cluster";
import { formatMasterKey, generateMasterKey } from "@wap/core";
import { ConfigError, helpText, parseConfig, type ServerConfig } from "./config.js";
import { createJsonLogger, type Logger, withFields } from "./logger.js";
import { databaseTargetOf, openStorageOnly } from "./open-storage.js";
import { createServer } from "./server.js";
import { StartupError } from "./startup-error.js";
import { runPrimary, stopMessage, workersProblem } from "./workers.js";

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
  if (parsed.command === "master-key") {
    process.stdout.write(`${formatMasterKey(generateMasterKey())}\n`);
    return 0;
  }
  const logger = createJsonLogger(parsed.config.logLevel);
  if (parsed.command === "migrate") return migrate(parsed.config, logger);
  if (cluster.isWorker) {
    return serve(
      parsed.config,
      withFields(logger, { worker: process.env.WAP_WORKER_SLOT, pid: process.pid }),
    );
  }
  const problem = workersProblem(parsed.config);
  if (problem !== undefined) {
    process.stderr.write(`wap-server: ${problem}\n`);
    return 2;
  }
  if (parsed.config.workers > 1) return runPrimary(parsed.config, logger);
  return serve(parsed.config, logger);
}

async function serve(config: ServerConfig, logger: Logger): Promise<number> {
  let server: Awaited<ReturnType<typeof createServer>>;
  try {
    server = await createServer({ ...config, logger });
  } catch (error) {
    logger.error("failed to start", { error: describe(error) });
    return 1;
  }
  let onMessage = (_message: unknown) => {};
  await new Promise<void>((resolve) => {
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) return;
      stopping = true;
      logger.info("signal received", { signal });
      // A second signal means "now"; but not after the primary's message: Ctrl-C in a terminal
      // signals the worker itself as well, and that is the same request to stop.
      if (signal !== "primary") {
        process.once("SIGINT", () => process.exit(130));
        process.once("SIGTERM", () => process.exit(143));
      }
      server.close().then(resolve, (error: unknown) => {
        logger.error("shutdown failed", { error: String(error) });
        resolve();
      });
    };
    process.once("SIGINT", () => stop("SIGINT"));
    process.once("SIGTERM", () => stop("SIGTERM"));
    // A worker's primary asks by message (see workers.ts).
    onMessage = (message) => {
      if (message === stopMessage) stop("primary");
    };
    if (cluster.isWorker) process.on("message", onMessage);
  });
  // The channel to the primary would keep a worker alive: let it go.
  if (cluster.isWorker) {
    process.off("message", onMessage);
    cluster.worker?.disconnect();
  }
  return 0;
}

/** Opening the storage runs the pending migrations (under a lock on PostgreSQL). */
async function migrate(config: ServerConfig, logger: Logger): Promise<number> {
  try {
    const target = databaseTargetOf(config.databaseUrl, config.dataDir);
    const started = performance.now();
    const storage = await openStorageOnly(target);
    await storage.close();
    logger.info("database schema is up to date", {
      backend: target.kind,
      ms: Math.round(performance.now() - started),
    });
    return 0;
  } catch (error) {
    logger.error("migration failed", { error: describe(error) });
    return 1;
  }
}

/** Our own errors carry a message meant for the operator. */
function describe(error: unknown): string {
  if (error instanceof ConfigError || error instanceof StartupError) return error.message;
  return String(error);
}
