/**
 * The real `wap-server` binary as a child process, run from source as an operator would run it
 * (`node --conditions=dev-source --import tsx packages/server/src/bin.ts`), configured by its
 * `WAP_*` environment. Stopped by its PID: SIGTERM for a clean stop, SIGKILL for a crash.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";

const repoRoot = join(import.meta.dirname, "../../../..");
const bin = "packages/server/src/bin.ts";
/** A server that does not listen within this long is killed and reported. */
const startTimeoutMs = 90_000;

// Whatever happens to the test, no server it started outlives it.
const running = new Set<ChildProcess>();
process.once("exit", () => {
  for (const child of running) sendSignal(child, "SIGKILL");
});

export interface ServerProcess {
  readonly child: ChildProcess;
  /** Base URL from the "listening" log line. */
  readonly url: string;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  /** SIGTERM; resolves to the exit code once the process has exited. */
  stop(): Promise<number | null>;
  /** SIGKILL at once (a crash: nothing runs after it); resolves once the process is gone. */
  kill(): Promise<void>;
  /** Resolves once the process has exited, however. */
  readonly exited: Promise<void>;
}

/**
 * Starts `wap-server` with `env` over the test process's environment; resolves once it listens
 * (its "listening" line is logged at `info`: `WAP_LOG_LEVEL` must not be above that).
 */
export function startServerProcess(env: Record<string, string>, name = "wap-server"): Promise<ServerProcess> {
  const child = spawn(process.execPath, ["--conditions=dev-source", "--import", "tsx", bin], {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.add(child);
  let output = "";
  const exited = new Promise<void>((resolve) =>
    child.once("exit", () => {
      running.delete(child);
      resolve();
    }),
  );
  const signal = (which: NodeJS.Signals) => sendSignal(child, which);
  return new Promise((resolve, reject) => {
    let started = false;
    const timer = setTimeout(() => {
      signal("SIGKILL");
      reject(new Error(`${name} did not listen within ${startTimeoutMs} ms:\n${output}`));
    }, startTimeoutMs);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (started) return;
      const line = output.split("\n").find((l) => l.includes('"msg":"listening"'));
      if (line === undefined) return;
      started = true;
      clearTimeout(timer);
      resolve({
        child,
        url: JSON.parse(line).url as string,
        output: () => output,
        exited,
        async stop() {
          signal("SIGTERM");
          await exited;
          return child.exitCode;
        },
        async kill() {
          signal("SIGKILL");
          await exited;
        },
      });
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("exit", (code, killedBy) => {
      clearTimeout(timer);
      if (!started) reject(new Error(`${name} exited (${killedBy ?? code}) before listening:\n${output}`));
    });
  });
}

/** What every instance of a multi-instance test shares: one schema, one master key, info logs. */
export function sharedInstanceEnv(databaseUrl: string, masterKey: string): Record<string, string> {
  return {
    WAP_DATABASE_URL: databaseUrl,
    WAP_MASTER_KEY: masterKey,
    WAP_HOST: "127.0.0.1",
    WAP_DATABASE_POOL_SIZE: "4",
    WAP_LOG_LEVEL: "info",
    WAP_SHUTDOWN_GRACE: "5",
  };
}

/** Signals the child by its PID, unless it is gone already. */
function sendSignal(child: ChildProcess, which: NodeJS.Signals): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(child.pid, which);
  } catch {
    // It exited between the check and the signal.
  }
}
