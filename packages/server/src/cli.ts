/**
 * The `wap-server` command: serves with settings from `WAP_*` variables and flags (see --help),
 * shuts down gracefully on SIGINT/SIGTERM and reloads its TLS certificate on SIGHUP. The other
 * commands are the operator's tasks: `migrate`, `master-key`, `backup`, `restore`,
 * `rotate-master-key` (docs/operations.md).
 *
 * @module
 */
import cluster from "node:cluster";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { formatMasterKey, generateMasterKey } from "@wap/core";
import { ConfigError, helpText, type ParsedCommandLine, parseConfig, type ServerConfig } from "./config.js";
import { createJsonLogger, type Logger, withFields } from "./logger.js";
import { loadMasterKey, masterKeyFileOf, parseMasterKeySetting } from "./master-key.js";
import { databaseTargetOf, openStorageOnly } from "./open-storage.js";
import { backupSqlite, OperatorError, restoreSqlite } from "./operator/backup.js";
import { holderOf } from "./operator/data-lock.js";
import { type RotationPlan, rotateMasterKey } from "./operator/rotate-master-key.js";
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
  if (parsed.version) {
    process.stdout.write(`wap-server ${serverVersion()}\n`);
    return 0;
  }
  if (parsed.command === "master-key") {
    process.stdout.write(`${formatMasterKey(generateMasterKey())}\n`);
    return 0;
  }
  const logger = createJsonLogger(parsed.config.logLevel);
  switch (parsed.command) {
    case "migrate":
      return migrate(parsed.config, logger);
    case "backup":
    case "restore":
    case "rotate-master-key":
      return operatorTask(parsed, logger);
  }
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

/** The version in the package's manifest (beside `src/` and `dist/` alike). */
export function serverVersion(): string {
  const manifest = join(import.meta.dirname, "..", "package.json");
  return (JSON.parse(readFileSync(manifest, "utf8")) as { version: string }).version;
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
    // SIGHUP's default is to exit: here it means "read the certificate again" (renewals).
    process.on("SIGHUP", () => {
      server
        .reloadTls()
        .catch((error: unknown) =>
          logger.error("TLS reload failed; the previous certificate stays in use", { error: String(error) }),
        );
    });
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

/** backup, restore and rotate-master-key: one task, a line on stdout for the operator, an exit code. */
async function operatorTask(parsed: ParsedCommandLine, logger: Logger): Promise<number> {
  const { config } = parsed;
  try {
    const target = databaseTargetOf(config.databaseUrl, config.dataDir);
    if (parsed.command === "rotate-master-key") {
      const plan = await rotationPlan(config, target);
      const storage = await openStorageOnly(target);
      try {
        const outcome = await rotateMasterKey(storage, plan);
        const { ca_key, secret, oidc_client_secret, audit_key, webhook_secret } = outcome.resealed;
        process.stdout.write(
          `re-sealed ${ca_key} CA keys, ${secret} server secrets, ${oidc_client_secret} OIDC client secrets, ${audit_key} audit signing keys and ${webhook_secret} webhook secrets under the new master key\n` +
            (outcome.keyFile
              ? `the new key is in ${outcome.keyFile}: back it up now; earlier backups still need the old key\n`
              : "every secret is under WAP_MASTER_KEY now: remove WAP_PREVIOUS_MASTER_KEY from every instance\n"),
        );
      } finally {
        await storage.close();
      }
      return 0;
    }
    if (target.kind !== "sqlite" || target.file === ":memory:") {
      throw new OperatorError(
        `${parsed.command} works on the embedded SQLite database; back up PostgreSQL with pg_dump and restore with pg_restore (docs/operations.md)`,
      );
    }
    if (parsed.command === "backup") {
      const to = resolve(parsed.file!);
      const { bytes } = await backupSqlite(target.file, to);
      process.stdout.write(
        `backed up ${target.file} to ${to} (${bytes} bytes); keep the master key with it: the backup's secrets open only with it\n`,
      );
      return 0;
    }
    const { masterKey } = await loadMasterKey({
      masterKey: config.masterKey,
      file: masterKeyFileOf(config),
      generate: false,
    });
    const { previous } = await restoreSqlite({
      from: resolve(parsed.file!),
      databaseFile: target.file,
      masterKey,
    });
    process.stdout.write(
      `restored ${target.file} from ${parsed.file}${previous ? `; the database it replaced is at ${previous}` : ""}\n`,
    );
    return 0;
  } catch (error) {
    logger.error(`${parsed.command} failed`, { error: describe(error) });
    return 1;
  }
}

/** How to rotate, from what the configuration holds (see operator/rotate-master-key.ts). */
async function rotationPlan(
  config: ServerConfig,
  target: ReturnType<typeof databaseTargetOf>,
): Promise<RotationPlan> {
  const keyFile = masterKeyFileOf(config);
  const { masterKey } = await loadMasterKey({ masterKey: config.masterKey, file: keyFile, generate: false });
  if (config.previousMasterKey !== undefined) {
    return {
      kind: "finish",
      masterKey,
      previousKey: parseMasterKeySetting(config.previousMasterKey, "WAP_PREVIOUS_MASTER_KEY"),
    };
  }
  if (config.masterKey !== undefined) {
    throw new OperatorError(
      "the master key comes from WAP_MASTER_KEY, so this command cannot replace it: set WAP_PREVIOUS_MASTER_KEY to the current key and WAP_MASTER_KEY to a new one (`wap-server master-key`), then run it again (docs/operations.md)",
    );
  }
  if (target.kind === "sqlite") {
    const holder = await holderOf(target.file);
    if (holder !== undefined) {
      throw new OperatorError(
        `a wap-server (process ${holder}) is serving ${target.file} with the current key: stop it first`,
      );
    }
  }
  return { kind: "replace-file", masterKey, keyFile };
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
  if (error instanceof ConfigError || error instanceof StartupError || error instanceof OperatorError) {
    return error.message;
  }
  return String(error);
}
