/**
 * The `wap-agent` command as the tests run it: the real program from its sources (`node --import
 * tsx packages/agent/src/bin.ts`), its JSON log lines collected, its exit awaited.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
const bin = join(repoRoot, "packages/agent/src/bin.ts");
const nodeArgs = ["--import", "tsx", bin];

/**
 * Runs a short command (`enroll`, `sshd-config`, `status`) to its end; with `asUid`, as that
 * user and group id (through `setpriv`), where root's permissions would hide a permission failure.
 */
export function wapAgent(
  args: readonly string[],
  env: NodeJS.ProcessEnv = {},
  asUid?: number,
  node = process.execPath,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const command = [node, ...nodeArgs, ...args];
  if (asUid !== undefined)
    command.unshift("setpriv", `--reuid=${asUid}`, `--regid=${asUid}`, "--clear-groups");
  return new Promise((done) => {
    execFile(
      command[0]!,
      command.slice(1),
      { cwd: repoRoot, env: { ...process.env, ...env }, timeout: 60_000 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : 1;
        done({ code, stdout, stderr });
      },
    );
  });
}

export interface LogLine {
  readonly level: string;
  readonly msg: string;
  readonly [field: string]: unknown;
}

/** `wap-agent run …`, running. */
export interface AgentProcess {
  readonly child: ChildProcess;
  readonly lines: LogLine[];
  stderr(): string;
  /** Resolves with the first log line from now on (or already seen after `from`) that `match` accepts. */
  waitFor(match: (line: LogLine) => boolean, from?: number): Promise<LogLine>;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stop(): Promise<void>;
}

/**
 * Starts `wap-agent run <args>`; `program` replaces the sources with another build of the
 * command (e.g. a bundled `wap-agent.js`, without the TypeScript loader); `node` runs it.
 */
export function runAgent(
  args: readonly string[],
  program: readonly string[] = nodeArgs,
  node = process.execPath,
): AgentProcess {
  const child = spawn(node, [...program, "run", ...args], {
    cwd: repoRoot,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const lines: LogLine[] = [];
  const waiters = new Set<() => void>();
  let pending = "";
  let stderr = "";
  child.stdout!.setEncoding("utf8");
  child.stdout!.on("data", (chunk: string) => {
    pending += chunk;
    for (let nl = pending.indexOf("\n"); nl >= 0; nl = pending.indexOf("\n")) {
      const text = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      if (process.env.WAP_DEBUG_AGENT) process.stdout.write(`agent: ${text}\n`);
      lines.push(JSON.parse(text) as LogLine);
    }
    for (const wake of waiters) wake();
  });
  child.stderr!.setEncoding("utf8");
  child.stderr!.on("data", (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
    child.once("exit", (code, signal) => {
      for (const wake of waiters) wake();
      done({ code, signal });
    }),
  );
  return {
    child,
    lines,
    stderr: () => stderr,
    exited,
    async waitFor(match, from = lines.length) {
      for (;;) {
        const found = lines.slice(from).find(match);
        if (found) return found;
        if (child.exitCode !== null || child.signalCode !== null) {
          throw new Error(
            `wap-agent exited (${child.exitCode ?? child.signalCode}): ${stderr}\n${JSON.stringify(lines.slice(-5))}`,
          );
        }
        let wake!: () => void;
        await new Promise<void>((resolve) => {
          wake = resolve;
          waiters.add(wake);
        });
        waiters.delete(wake);
      }
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        await exited;
      }
    },
  };
}
