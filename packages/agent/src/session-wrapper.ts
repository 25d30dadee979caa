#!/usr/bin/env node
/**
 * `wap-agent-session`: the program sshd runs for every login the platform manages
 * (`ForceCommand`, see sshd-match.ts), as the user who logged in, before anything of theirs.
 *
 * 1. It asks the agent, over its Unix socket, to register the login (`begin` with its own pid).
 *    The agent reads what the login is from this process as sshd started it (/proc/<pid>:
 *    the certificate file sshd names in `SSH_USER_AUTH`, the command, the client) and registers
 *    it with the server, which answers whether the certificate's subject may still log in.
 * 2. Answered `ok`, it restores the environment sshd's `SetEnv` hardened (SHLVL, ZDOTDIR,
 *    XDG_CONFIG_HOME, BASH_ENV, ENV), adds `WAP_SESSION_ID`, and runs what the client asked for
 *    as sshd would have: the login shell, or `$SHELL -c <command>` (commands and subsystems). It
 *    runs it in a pseudo-terminal when sshd gave the login one, with pipes otherwise, relays the
 *    bytes, counts them, and exits with the command's status after telling the agent (`end`).
 * 3. Answered `unmanaged` (a login with the user's own key, not a platform certificate), it runs
 *    the same way, unregistered. Answered `refused`, it says why on stderr and exits 255.
 * 4. `terminate{reason}` from the agent (access revoked, an administrator): it says why, hangs
 *    up the command and exits; the agent kills what is left.
 *
 * When the agent cannot be reached, the login follows the daemon's policy file
 * (`<sshd dir>/login_policy`, written by the agent): `open` runs it unregistered, anything else
 * (or no file) refuses it. When the agent goes away during a login, `fail-closed` ends it.
 *
 * This file imports only Node, node-pty and sftp-transfers.ts (Node only): it starts for every login.
 *
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { type FileActivity, isSftpServerCommand, SftpTransfers } from "./sftp-transfers.js";

interface WrapperOptions {
  readonly socket: string;
  readonly policyFile: string;
  /** Folders sshd's SetEnv points ZDOTDIR and XDG_CONFIG_HOME at: dropped before the user's command. */
  readonly emptyDir: string;
}

type AgentAnswer =
  | { readonly type: "ok"; readonly sessionId: string; readonly record: boolean }
  | { readonly type: "unmanaged" }
  | { readonly type: "refused"; readonly reason: string };

const connectTimeoutMs = 10_000;

function parseArgs(argv: readonly string[]): WrapperOptions {
  const value = (name: string, fallback: string) => {
    const at = argv.indexOf(name);
    return at >= 0 && argv[at + 1] !== undefined ? argv[at + 1]! : fallback;
  };
  return {
    socket: value("--socket", "/run/wap-agent/sessions.sock"),
    policyFile: value("--policy", "/etc/ssh/wap/login_policy"),
    emptyDir: value("--empty-dir", "/etc/ssh/wap/empty"),
  };
}

/** Escapes what the agent said before it reaches the user's terminal. */
function printable(text: string): string {
  let out = "";
  for (const char of text.slice(0, 500)) {
    const code = char.codePointAt(0)!;
    out += code < 0x20 || (code >= 0x7f && code <= 0x9f) ? "?" : char;
  }
  return out;
}

function fail(message: string): never {
  process.stderr.write(`wap: ${printable(message)}\r\n`);
  process.exit(255);
}

/** The newline-delimited JSON messages of one socket. */
function lines(socket: Socket, onMessage: (message: Record<string, unknown>) => void): void {
  let pending = "";
  socket.setEncoding("utf8");
  socket.on("data", (chunk: string) => {
    pending += chunk;
    if (pending.length > 1 << 20) socket.destroy();
    for (let nl = pending.indexOf("\n"); nl >= 0; nl = pending.indexOf("\n")) {
      const text = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      try {
        const message = JSON.parse(text) as unknown;
        if (typeof message === "object" && message !== null) onMessage(message as Record<string, unknown>);
      } catch {
        // Not from the agent: ignored.
      }
    }
  });
}

function policy(file: string): "open" | "fail-closed" {
  try {
    return readFileSync(file, "utf8").trim() === "open" ? "open" : "fail-closed";
  } catch {
    return "fail-closed";
  }
}

/** The environment the user's command gets: sshd's, without the hardening, with the session id. */
function userEnvironment(options: WrapperOptions, sessionId: string | undefined): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.SHLVL;
  for (const name of ["ZDOTDIR", "XDG_CONFIG_HOME"] as const) {
    if (env[name] === options.emptyDir) delete env[name];
  }
  for (const name of ["BASH_ENV", "ENV"] as const) if (env[name] === "") delete env[name];
  if (sessionId !== undefined) env.WAP_SESSION_ID = sessionId;
  return env;
}

interface Counters {
  bytesIn: number;
  bytesOut: number;
  /** Output for the recording, when the login is recorded. */
  tap?: (data: Uint8Array) => void;
  /** Input and stdout alone (not stderr), for the sftp listing of a recorded subsystem login. */
  inputTap?: (data: Uint8Array) => void;
  stdoutTap?: (data: Uint8Array) => void;
  resized?: (cols: number, rows: number) => void;
}

/** Output batched for the agent (the recording): at most every 20 ms, or 32 KiB at once. */
function recordingTap(socket: Socket): { tap: (data: Uint8Array) => void; flush: () => void } {
  let pending: Buffer[] = [];
  let size = 0;
  let timer: NodeJS.Timeout | undefined;
  const flush = () => {
    clearTimeout(timer);
    timer = undefined;
    if (size === 0 || socket.destroyed) return;
    socket.write(`${JSON.stringify({ type: "o", d: Buffer.concat(pending).toString("base64") })}\n`);
    pending = [];
    size = 0;
  };
  return {
    flush,
    tap(data) {
      pending.push(Buffer.from(data));
      size += data.byteLength;
      if (size >= 32 * 1024) flush();
      else timer ??= setTimeout(flush, 20);
    },
  };
}

interface Running {
  readonly exited: Promise<number>;
  hangUp(): void;
}

/** The user's command with pipes: stdin, stdout and stderr relayed and counted. */
function runPiped(
  file: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  counters: Counters,
): Running {
  const child: ChildProcess = spawn(file, args, { env, stdio: ["pipe", "pipe", "pipe"] });
  process.stdin.on("data", (data: Buffer) => {
    counters.bytesIn += data.length;
    counters.inputTap?.(data);
    if (!child.stdin!.write(data)) {
      process.stdin.pause();
      child.stdin!.once("drain", () => process.stdin.resume());
    }
  });
  process.stdin.on("end", () => child.stdin!.end());
  child.stdin!.on("error", () => {});
  const relay = (from: NodeJS.ReadableStream, to: NodeJS.WritableStream, stdout: boolean) =>
    new Promise<void>((done) => {
      from.on("data", (data: Buffer) => {
        counters.bytesOut += data.length;
        counters.tap?.(data);
        if (stdout) counters.stdoutTap?.(data);
        if (!to.write(data)) {
          from.pause();
          to.once("drain", () => from.resume());
        }
      });
      from.on("end", done);
      from.on("error", done);
    });
  const drained = Promise.all([
    relay(child.stdout!, process.stdout, true),
    relay(child.stderr!, process.stderr, false),
  ]);
  const exited = new Promise<number>((resolve) => {
    child.on("error", (error) => {
      process.stderr.write(`wap: cannot start ${printable(file)}: ${printable(error.message)}\n`);
      resolve(127);
    });
    child.on("exit", (code, signal) => {
      void drained.then(() => resolve(code ?? (signal ? 128 + signalNumber(signal) : 255)));
    });
  });
  return {
    exited,
    hangUp() {
      signalTree(child.pid, "SIGHUP");
    },
  };
}

/** The user's command in a pseudo-terminal of the size of ours, relayed and counted. */
async function runInPty(
  file: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  counters: Counters,
): Promise<Running> {
  const { spawn: spawnPty } = await import("@lydell/node-pty");
  const stdout = process.stdout;
  const pty = spawnPty(file, [...args], {
    name: env.TERM ?? "xterm-256color",
    cols: stdout.columns || 80,
    rows: stdout.rows || 24,
    cwd: process.cwd(),
    env: env as Record<string, string>,
    encoding: null,
  });
  if (process.stdin.isTTY) process.stdin.setRawMode(true);
  process.stdin.on("data", (data: Buffer) => {
    counters.bytesIn += data.length;
    pty.write(data as unknown as string);
  });
  pty.onData((data) => {
    const bytes = data as unknown as Buffer;
    counters.bytesOut += bytes.length;
    counters.tap?.(bytes);
    stdout.write(bytes);
  });
  process.on("SIGWINCH", () => {
    pty.resize(stdout.columns || 80, stdout.rows || 24);
    counters.resized?.(stdout.columns || 80, stdout.rows || 24);
  });
  const exited = new Promise<number>((resolve) =>
    pty.onExit(({ exitCode, signal }) => resolve(signal ? 128 + signal : exitCode)),
  );
  return {
    exited,
    hangUp() {
      signalTree(pty.pid, "SIGHUP");
    },
  };
}

function signalNumber(signal: NodeJS.Signals): number {
  const numbers: Partial<Record<NodeJS.Signals, number>> = { SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15 };
  return numbers[signal] ?? 0;
}

function signalTree(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  for (const target of [-pid, pid]) {
    try {
      process.kill(target, signal);
    } catch {
      // gone already
    }
  }
}

/**
 * A recorded sftp login: instead of its binary protocol, the files it read and wrote go to the
 * agent (`f`, one per file as it is done; `sftp-end` with why the listing stopped, if it did).
 */
function sftpListing(socket: Socket): { transfers: SftpTransfers; finish: () => void } {
  const send = (message: object) => {
    if (!socket.destroyed) socket.write(`${JSON.stringify(message)}\n`);
  };
  const transfers = new SftpTransfers((file: FileActivity) => send({ type: "f", ...file }));
  return {
    transfers,
    finish() {
      transfers.finish();
      send({ type: "sftp-end", ...(transfers.failed !== undefined ? { failed: transfers.failed } : {}) });
    },
  };
}

/** What sshd asked for: the login shell, or `$SHELL -c <command>`. */
function commandLine(): { file: string; args: string[] } {
  const shell = process.env.SHELL || "/bin/sh";
  const original = process.env.SSH_ORIGINAL_COMMAND;
  if (original === undefined) return { file: shell, args: ["-l"] };
  if (original === "internal-sftp") {
    fail(
      "this host serves sftp with internal-sftp, which a forced command cannot run: set `Subsystem sftp /usr/lib/openssh/sftp-server`",
    );
  }
  return { file: shell, args: ["-c", original] };
}

async function main(): Promise<void> {
  const options = parseArgs(process.argv.slice(2));
  const socket = connect(options.socket);
  socket.setTimeout(connectTimeoutMs);
  const answer = await new Promise<AgentAnswer | "unreachable">((resolve) => {
    socket.once("error", () => resolve("unreachable"));
    socket.once("timeout", () => resolve("unreachable"));
    socket.once("close", () => resolve("unreachable"));
    lines(socket, (message) => {
      if (message.type === "ok" && typeof message.sessionId === "string") {
        resolve({ type: "ok", sessionId: message.sessionId, record: message.record === true });
      } else if (message.type === "unmanaged") resolve({ type: "unmanaged" });
      else if (message.type === "refused") resolve({ type: "refused", reason: String(message.reason) });
    });
    socket.once("connect", () => {
      const size = { cols: process.stdout.columns || 80, rows: process.stdout.rows || 24 };
      socket.write(`${JSON.stringify({ type: "begin", pid: process.pid, ...size })}\n`);
    });
  });
  socket.setTimeout(0);
  if (answer === "unreachable") {
    socket.destroy();
    if (policy(options.policyFile) !== "open") {
      fail(
        "this login cannot be registered with the platform (its agent is not running), and this host refuses unregistered logins",
      );
    }
  } else if (answer.type === "refused") {
    fail(`login refused: ${answer.reason}`);
  }
  const sessionId = answer !== "unreachable" && answer.type === "ok" ? answer.sessionId : undefined;
  if (sessionId === undefined) socket.destroy();

  const counters: Counters = { bytesIn: 0, bytesOut: 0 };
  const recorded = answer !== "unreachable" && answer.type === "ok" && answer.record;
  const sftp =
    recorded && isSftpServerCommand(process.env.SSH_ORIGINAL_COMMAND ?? "") ? sftpListing(socket) : undefined;
  const recording = recorded && !sftp ? recordingTap(socket) : undefined;
  if (sftp) {
    counters.inputTap = (data) => sftp.transfers.fromClient(data);
    counters.stdoutTap = (data) => sftp.transfers.fromServer(data);
  }
  if (recording) {
    counters.tap = recording.tap;
    counters.resized = (cols, rows) => {
      recording.flush();
      socket.write(`${JSON.stringify({ type: "r", cols, rows })}\n`);
    };
  }
  const { file, args } = commandLine();
  const env = userEnvironment(options, sessionId);
  const tty = process.env.SSH_TTY !== undefined && process.stdin.isTTY === true;
  const running = tty ? await runInPty(file, args, env, counters) : runPiped(file, args, env, counters);

  // The client went away (sshd closed our output): what it ran goes too, as with a hang-up.
  for (const stream of [process.stdout, process.stderr]) stream.on("error", () => running.hangUp());
  let terminated: string | undefined;
  if (sessionId !== undefined) {
    lines(socket, (message) => {
      if (message.type !== "terminate" || terminated !== undefined) return;
      terminated = String(message.reason ?? "");
      process.stderr.write(`\r\nwap: this session was ended: ${printable(terminated)}\r\n`);
      running.hangUp();
    });
    socket.on("close", () => {
      if (terminated !== undefined || policy(options.policyFile) === "open") return;
      terminated = "the platform's agent went away";
      process.stderr.write(`\r\nwap: this session was ended: ${terminated}\r\n`);
      running.hangUp();
    });
    socket.on("error", () => {});
  }
  const status = await running.exited;
  recording?.flush();
  sftp?.finish();
  if (sessionId !== undefined && !socket.destroyed) {
    const end = { type: "end", exitStatus: status, ...counters };
    await new Promise<void>((done) => socket.end(`${JSON.stringify(end)}\n`, done));
  }
  if (process.stdin.isTTY) process.stdin.setRawMode(false);
  process.exit(status);
}

void main().catch((error: unknown) => fail(error instanceof Error ? error.message : String(error)));
