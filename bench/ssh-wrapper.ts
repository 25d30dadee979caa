/**
 * The SSH session wrapper (`wap-agent-session`, what sshd runs for every managed login), built as
 * installed, 100 at once, each in a pseudo-terminal as sshd gives an interactive login one:
 *
 * - memory per login: the wrappers' proportional set size (Pss) and private dirty memory, summed
 *   and divided by their number (what each more login costs the machine), and one wrapper's RSS
 *   (which counts the Node binary every process shares);
 * - keystroke echo through the wrapper: a byte written to the login's terminal, relayed by the
 *   wrapper to the command's own terminal (`cat`), echoed, and relayed back; 20 keystrokes on each
 *   of the 100 logins, one login at a time: p50 and p99.
 *
 * The wrappers run without an agent (the policy file says `open`), so the figures are the
 * wrapper's own: registering a login adds one Unix-socket round trip at its start. Run alone:
 *
 *   node --conditions=dev-source --import tsx bench/ssh-wrapper.ts
 *
 * @module
 */
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { BenchFigure, BenchSection, BenchTarget } from "./results.js";

const logins = 100;
const keystrokes = 20;
const packageDir = fileURLToPath(new URL("../packages/agent/", import.meta.url));

interface Pty {
  readonly pid: number;
  write(data: string): void;
  onData(listener: (data: string) => void): { dispose(): void };
  kill(signal?: string): void;
}

/** node-pty as the agent package has it (the bench itself does not depend on it). */
const { spawn } = createRequire(join(packageDir, "package.json"))("@lydell/node-pty") as {
  spawn(file: string, args: string[], options: Record<string, unknown>): Pty;
};

async function buildWrapper(): Promise<string> {
  const { build } = await import("tsup");
  const outDir = join(packageDir, "node_modules/.cache/wap-session-bench");
  await build({
    entry: { "session-wrapper": join(packageDir, "src/session-wrapper.ts") },
    format: ["esm"],
    target: "node20",
    outDir,
    dts: false,
    sourcemap: false,
    clean: true,
    silent: true,
    config: false,
    tsconfig: join(packageDir, "tsconfig.json"),
    external: ["@lydell/node-pty"],
  });
  return join(outDir, "session-wrapper.js");
}

async function memoryOf(pid: number): Promise<{ rss: number; pss: number; privateDirty: number }> {
  const text = await readFile(`/proc/${pid}/smaps_rollup`, "utf8");
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? 0);
  return { rss: field("Rss"), pss: field("Pss"), privateDirty: field("Private_Dirty") };
}

const percentile = (sorted: readonly number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

export async function runSshWrapperBench(): Promise<BenchSection> {
  const wrapper = await buildWrapper();
  const dir = await mkdtemp(join(tmpdir(), "wap-bench-wrapper-"));
  const policy = join(dir, "login_policy");
  await writeFile(policy, "open\n");
  const ptys: Pty[] = [];
  try {
    for (let i = 0; i < logins; i++) {
      const pty = spawn(process.execPath, [wrapper, "--socket", join(dir, "none.sock"), "--policy", policy], {
        name: "xterm-256color",
        cols: 80,
        rows: 24,
        cwd: dir,
        env: {
          PATH: process.env.PATH ?? "/usr/bin:/bin",
          SHELL: "/bin/sh",
          SSH_TTY: "/dev/pts/bench",
          SSH_ORIGINAL_COMMAND: "exec cat",
          TERM: "xterm-256color",
        },
      });
      ptys.push(pty);
    }
    // Each login answers a first keystroke once its wrapper and `cat` run.
    const echo = (pty: Pty, char: string) =>
      new Promise<number>((resolve) => {
        const start = process.hrtime.bigint();
        const listener = pty.onData((data) => {
          if (!data.includes(char)) return;
          listener.dispose();
          resolve(Number(process.hrtime.bigint() - start) / 1e6);
        });
        pty.write(char);
      });
    for (const pty of ptys) await echo(pty, "s");
    const memory = await Promise.all(ptys.map((p) => memoryOf(p.pid)));
    const sum = (key: "rss" | "pss" | "privateDirty") => memory.reduce((total, m) => total + m[key], 0);
    const pssMiB = sum("pss") / logins / 1024;
    const privateMiB = sum("privateDirty") / logins / 1024;
    const rssMiB = sum("rss") / logins / 1024;
    const latencies: number[] = [];
    for (let round = 0; round < keystrokes; round++) {
      for (const pty of ptys) latencies.push(await echo(pty, String.fromCharCode(97 + (round % 26))));
    }
    latencies.sort((a, b) => a - b);
    const p50 = percentile(latencies, 50);
    const p99 = percentile(latencies, 99);
    console.log(
      `  ${logins} wrappers: Pss ${pssMiB.toFixed(1)} MiB, private dirty ${privateMiB.toFixed(1)} MiB, RSS ${rssMiB.toFixed(1)} MiB each; echo p50 ${p50.toFixed(2)} ms, p99 ${p99.toFixed(2)} ms`,
    );
    const figures: BenchFigure[] = [
      { label: "SSH session wrapper, Pss per login", value: pssMiB, unit: "MiB" },
      { label: "SSH session wrapper, private dirty per login", value: privateMiB, unit: "MiB" },
      { label: "SSH session wrapper, RSS of one", value: rssMiB, unit: "MiB" },
      { label: `keystroke echo through the wrapper, ${logins} logins, p50`, value: p50, unit: "ms" },
      { label: `keystroke echo through the wrapper, ${logins} logins, p99`, value: p99, unit: "ms" },
    ];
    const targets: BenchTarget[] = [
      {
        figure: "SSH session wrapper, Pss per login",
        comparison: "<=",
        value: 8,
        unit: "MiB",
        met: pssMiB <= 8,
      },
      {
        figure: `keystroke echo through the wrapper, ${logins} logins, p99`,
        comparison: "<=",
        value: 20,
        unit: "ms",
        met: p99 <= 20,
      },
    ];
    return {
      title: "SSH session wrapper",
      method: `${logins} session wrappers built as installed, each in a pseudo-terminal running \`cat\` in its own; memory from /proc/<pid>/smaps_rollup, echo of ${keystrokes} keystrokes per login, one at a time.`,
      figures,
      comparisons: [],
      targets,
      series: [],
      notes: [
        "Each wrapper is a Node process: most of its RSS is the Node runtime every process maps (a bare `node -e` is about 40 MiB); Pss shares it among them.",
        "Without an agent: registering a login adds one Unix-socket round trip at its start, not to each keystroke.",
      ],
    };
  } finally {
    for (const pty of ptys) pty.kill("SIGKILL");
    await rm(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const section = await runSshWrapperBench();
  console.log(JSON.stringify(section.figures, null, 2));
  process.exit(0);
}
