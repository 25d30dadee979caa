/**
 * `--workers <n>`: one primary process forks `n` worker processes that share the listening port
 * through node:cluster (the primary accepts connections and hands them round-robin to workers).
 * Node 20 has no SO_REUSEPORT for `net.Server`, and with it the kernel would spread connections
 * by hash, not by load, so a cluster it is. Each worker is a whole server instance (its own
 * instance id, the same master key), exactly as several instances over one PostgreSQL are.
 *
 * The primary serves nothing: it starts the workers, restarts one that dies unexpectedly (with
 * backoff), forwards SIGTERM/SIGINT as a graceful stop and exits once every worker has exited.
 *
 * @module
 */
import cluster, { type Worker } from "node:cluster";
import type { ServerConfig } from "./config.js";
import type { Logger } from "./logger.js";
import { databaseTargetOf } from "./open-storage.js";

/** The message the primary sends a worker to stop gracefully (a signal could reach it twice). */
export const stopMessage = "wap:stop";

const firstRestartDelayMs = 500;
const maxRestartDelayMs = 30_000;
/** A worker that ran this long before dying restarts after the first delay again. */
const healthyRunMs = 60_000;

/** Why `workers` cannot be more than 1 with these settings, or undefined when it can. */
export function workersProblem(config: ServerConfig): string | undefined {
  if (config.workers <= 1) return undefined;
  if (databaseTargetOf(config.databaseUrl, config.dataDir).kind === "postgres") return undefined;
  return `${config.workers} workers need PostgreSQL: the embedded SQLite database is written by one process, and its event bus lives inside that process, so other workers would neither share its write queue nor see its events. Set WAP_DATABASE_URL=postgres://... to run several workers, or run one (WAP_WORKERS=1)`;
}

/** Runs the primary until every worker has exited after a stop; resolves to the exit code. */
export function runPrimary(config: ServerConfig, logger: Logger): Promise<number> {
  cluster.schedulingPolicy = cluster.SCHED_RR;
  logger.info("starting workers", { workers: config.workers, pid: process.pid });
  let stopping = false;
  let anyListened = false;
  let failed = false;
  /** Per worker slot: how many times in a row it died soon after starting. */
  const crashes = new Map<number, number>();
  const startedAt = new Map<Worker, number>();
  const slots = new Map<Worker, number>();
  const timers = new Set<NodeJS.Timeout>();

  const fork = (slot: number) => {
    const worker = cluster.fork({ WAP_WORKER_SLOT: String(slot) });
    slots.set(worker, slot);
    startedAt.set(worker, Date.now());
    logger.info("worker started", { slot, worker: worker.id, pid: worker.process.pid });
    worker.once("listening", () => {
      anyListened = true;
    });
  };

  return new Promise<number>((resolve) => {
    const finishIfDone = () => {
      if (slots.size > 0 || timers.size > 0) return;
      logger.info("every worker exited", { pid: process.pid });
      resolve(failed ? 1 : 0);
    };

    const stop = (signal: NodeJS.Signals) => {
      if (stopping) {
        // A second signal means "now", as for a single process.
        for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill("SIGKILL");
        process.exit(signal === "SIGINT" ? 130 : 143);
      }
      stopping = true;
      logger.info("signal received", { signal, pid: process.pid });
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      for (const worker of Object.values(cluster.workers ?? {})) {
        if (worker?.isConnected()) worker.send(stopMessage);
        else worker?.process.kill("SIGTERM");
      }
      finishIfDone();
    };
    process.on("SIGINT", () => stop("SIGINT"));
    process.on("SIGTERM", () => stop("SIGTERM"));

    cluster.on("exit", (worker, code, signal) => {
      const slot = slots.get(worker) ?? 0;
      const ranMs = Date.now() - (startedAt.get(worker) ?? Date.now());
      slots.delete(worker);
      startedAt.delete(worker);
      const fields = { slot, worker: worker.id, pid: worker.process.pid, code, signal, ranMs };
      if (stopping) {
        logger.info("worker exited", fields);
        if (code !== 0) failed = true;
        finishIfDone();
        return;
      }
      if (!anyListened) {
        // No worker ever came up: the settings or the database are wrong, and every restart
        // would fail the same way.
        logger.error("worker exited before serving; stopping", fields);
        failed = true;
        stop("SIGTERM");
        return;
      }
      const inARow = ranMs >= healthyRunMs ? 0 : (crashes.get(slot) ?? 0);
      crashes.set(slot, inARow + 1);
      const delayMs = Math.min(maxRestartDelayMs, firstRestartDelayMs * 2 ** inARow);
      logger.error("worker exited unexpectedly; restarting", { ...fields, restartInMs: delayMs });
      const timer = setTimeout(() => {
        timers.delete(timer);
        if (!stopping) fork(slot);
      }, delayMs);
      timers.add(timer);
    });

    for (let slot = 1; slot <= config.workers; slot++) fork(slot);
  });
}
