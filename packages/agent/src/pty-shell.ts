/**
 * A user's login shell in a pseudo-terminal (@lydell/node-pty), as that user.
 *
 * Running as root, the agent starts the shell through util-linux `setpriv`, which sets the
 * user's uid, gid and supplementary groups (`--init-groups`) before it execs the shell: node-pty
 * alone would set uid and gid but leave the user without their other groups. Not running as
 * root, it can only start shells as its own user. The environment is built from scratch (the
 * agent's own, with its settings, never reaches the shell).
 *
 * @module
 */
import { existsSync } from "node:fs";
import { userInfo } from "node:os";
import { type IPty, spawn } from "@lydell/node-pty";
import type { LocalAccount } from "./machine.js";

export interface ShellIo {
  output(data: Uint8Array): void;
  exit(reason: string): void;
}

export interface Shell {
  readonly pid: number;
  write(data: Uint8Array): void;
  resize(cols: number, rows: number): void;
  pause(): void;
  resume(): void;
  /** Hangs up the terminal (SIGHUP, as a closed terminal does), then SIGKILL after 2 s. */
  kill(): Promise<void>;
}

const setprivPaths = ["/usr/bin/setpriv", "/bin/setpriv"];

/** Why the agent cannot start a shell as `account`, or undefined when it can. */
export function cannotRunAs(account: LocalAccount): string | undefined {
  const uid = process.getuid?.() ?? -1;
  if (uid === 0) return undefined;
  if (account.uid === uid) return undefined;
  return `the agent runs as ${userInfo().username}, not root: it can start shells only as ${userInfo().username}`;
}

export function startShell(account: LocalAccount, io: ShellIo, size = { cols: 80, rows: 24 }): Shell {
  const env: Record<string, string> = {
    TERM: "xterm-256color",
    HOME: account.home,
    USER: account.username,
    LOGNAME: account.username,
    SHELL: account.shell,
    PATH:
      account.uid === 0
        ? "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        : "/usr/local/bin:/usr/bin:/bin",
    LANG: process.env.LANG ?? "C.UTF-8",
  };
  const cwd = existsSync(account.home) ? account.home : "/";
  const asRoot = process.getuid?.() === 0;
  const setpriv = setprivPaths.find((path) => existsSync(path));
  const [file, args] =
    asRoot && account.uid !== 0 && setpriv
      ? [
          setpriv,
          [`--reuid=${account.uid}`, `--regid=${account.gid}`, "--init-groups", "--", account.shell, "-l"],
        ]
      : [account.shell, ["-l"]];
  const pty: IPty = spawn(file, args, {
    name: "xterm-256color",
    cols: size.cols,
    rows: size.rows,
    cwd,
    env,
    // Bytes both ways: terminal output need not be valid UTF-8 at chunk boundaries.
    encoding: null,
    // Without setpriv, root still drops to the user (uid and gid only).
    ...(asRoot && account.uid !== 0 && !setpriv && { uid: account.uid, gid: account.gid }),
  });
  let exited = false;
  const exit = new Promise<void>((resolve) =>
    pty.onExit(({ exitCode, signal }) => {
      exited = true;
      io.exit(`the shell exited (${signal ? `signal ${signal}` : exitCode})`);
      resolve();
    }),
  );
  // With `encoding: null` node-pty hands over Buffers, whatever its typings say.
  pty.onData((data) => io.output(data as unknown as Buffer));
  return {
    pid: pty.pid,
    write: (data) => {
      if (!exited) pty.write(Buffer.from(data) as unknown as string);
    },
    resize: (cols, rows) => {
      if (!exited) pty.resize(cols, rows);
    },
    pause: () => pty.pause(),
    resume: () => pty.resume(),
    async kill() {
      if (exited) return;
      signalGroup(pty.pid, "SIGHUP");
      const force = setTimeout(() => signalGroup(pty.pid, "SIGKILL"), 2_000);
      await exit;
      clearTimeout(force);
    },
  };
}

/** Signals the process group the shell leads (node-pty makes it a session leader). */
function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}
