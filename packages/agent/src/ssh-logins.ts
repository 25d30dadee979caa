/**
 * The agent's side of SSH logins through sshd: a Unix socket (`/run/wap-agent/sessions.sock`)
 * the session wrapper (session-wrapper.ts, sshd's `ForceCommand`) reports to, one connection per
 * login, newline-delimited JSON:
 *
 * - wrapper → agent `{type: "begin", pid, cols, rows}`; the agent answers `{type: "ok", sessionId,
 *   record}`, `{type: "unmanaged"}` (not a certificate login) or `{type: "refused", reason}`;
 * - wrapper → agent, when `record`: `{type: "o", d: <base64 output>}` and `{type: "r", cols,
 *   rows}`, which the agent writes into the login's recording (ssh-recording.ts);
 * - wrapper → agent `{type: "end", exitStatus, bytesIn, bytesOut}` when the command ended;
 * - agent → wrapper `{type: "terminate", reason}` when the server says the login must end.
 *
 * Nothing the wrapper says about the login is believed: the agent (root) reads it from the
 * process sshd started, `/proc/<pid>`: its parent must be sshd, and its environment as sshd set
 * it names the certificate file (`SSH_USER_AUTH`, which `ExposeAuthInfo yes` makes sshd write),
 * the user, the command and the client. The certificate is then checked by the server
 * (BeginSSHSession): issued by the platform for this target's authority, not revoked, its
 * subject still granted the login. Refused, or not answered in time while the daemon requires
 * registration, the login ends before it runs anything.
 *
 * Ending a login (a `terminateSession` from the server, or a wrapper that went away without
 * `end`): the wrapper is told, then after a second its process group is killed and the sshd
 * process it runs under is terminated, which closes the connection and hangs up its terminal.
 * When the agent itself stops, its logins are left to the wrappers, which follow the daemon's
 * policy (`login_policy`: a `fail-closed` login ends, an `open` one goes on).
 *
 * @module
 */
import { randomUUID } from "node:crypto";
import { chmod, mkdir, readFile, rm } from "node:fs/promises";
import { createServer, type Server, type Socket } from "node:net";
import { dirname } from "node:path";
import { SessionKind } from "@wap/api";
import type { DaemonClient } from "@wap/client";
import { readSshCertificate } from "@wap/ssh-wire";
import { allowlistOf, type CommandDecision, decideCommand } from "@wap/ssh-wire/extensions";
import { explain, isRefusal } from "./errors.js";
import type { Logger } from "./log.js";
import { isSftpServerCommand } from "./sftp-transfers.js";
import { LoginRecording } from "./ssh-recording.js";
import type { SpooledLogin, SshSpool } from "./ssh-spool.js";

export const defaultSessionsSocket = "/run/wap-agent/sessions.sock";

export const loginLimits = {
  /** Live logins one agent tracks; more are refused. */
  maxLogins: 1000,
  /** How long the server may take to register a login. */
  beginTimeoutMs: 5_000,
  /** Between telling the wrapper to stop and killing what is left. */
  terminateGraceMs: 1_000,
  /** The certificate file sshd writes is a few KiB; anything larger is not one. */
  authInfoBytes: 64 * 1024,
} as const;

/** What the agent reads of a login from the process sshd started. */
export interface LoginFacts {
  readonly username: string;
  readonly certificate: string | undefined;
  readonly kind: "shell" | "exec" | "subsystem";
  readonly command: string;
  readonly tty: boolean;
  readonly clientAddress: string;
  /** The sshd process the wrapper runs under. */
  readonly sshdPid: number;
}

/** A login the agent follows. */
interface Login {
  /** The server's session id (`local-<offline id>` until a login kept offline is registered). */
  id: string;
  readonly pid: number;
  readonly facts: LoginFacts;
  readonly socket: Socket;
  readonly recording: LoginRecording | undefined;
  /** A login that began while the server could not be reached, kept in the spool. */
  readonly spooled: SpooledLogin | undefined;
  ended: boolean;
  terminating?: string;
}

export interface SshLoginEvents {
  begun(login: { sessionId: string; username: string; kind: string; pid: number }): void;
  refused(login: { pid: number; reason: string }): void;
  ended(login: { sessionId: string; reason: string }): void;
}

export interface SshLoginServerOptions {
  readonly socketPath: string;
  readonly client: DaemonClient;
  readonly log: Logger;
  readonly events: SshLoginEvents;
  /** The daemon's policy: refuse logins that cannot be registered. */
  readonly requireRecording: () => boolean;
  /** Whether the daemon recorded sessions at the last sync (for logins begun offline). */
  readonly recordSessions: () => boolean;
  /** Where logins that begin while the server cannot be reached are kept until it can. */
  readonly spool?: SshSpool;
  /** Read instead of /proc (tests of the parsing only). */
  readonly procRoot?: string;
}

/** `KEY=value` pairs of a NUL-separated environment block. */
export function parseEnviron(block: Buffer): Map<string, string> {
  const env = new Map<string, string>();
  for (const entry of block.toString("utf8").split("\0")) {
    const eq = entry.indexOf("=");
    if (eq > 0 && !env.has(entry.slice(0, eq))) env.set(entry.slice(0, eq), entry.slice(eq + 1));
  }
  return env;
}

/** The certificate line of an `SSH_USER_AUTH` file (`publickey <cert type> <base64>`), if any. */
export function certificateOfAuthInfo(text: string): string | undefined {
  for (const line of text.split("\n")) {
    const [method, type, blob] = line.trim().split(/\s+/);
    if (method === "publickey" && type?.endsWith("-cert-v01@openssh.com") && blob) return `${type} ${blob}`;
  }
  return undefined;
}

/** `ip:port` of the client from `SSH_CONNECTION` (`client_ip client_port server_ip server_port`). */
export function clientAddressOf(connection: string | undefined): string {
  const [ip, port] = (connection ?? "").split(" ");
  if (!ip || !port) return "";
  return ip.includes(":") ? `[${ip}]:${port}` : `${ip}:${port}`;
}

/** What sshd was asked to run, from `SSH_ORIGINAL_COMMAND` (absent for a shell). */
export function kindOf(original: string | undefined): Pick<LoginFacts, "kind" | "command"> {
  if (original === undefined) return { kind: "shell", command: "" };
  if (original === "internal-sftp" || isSftpServerCommand(original)) {
    return { kind: "subsystem", command: "sftp" };
  }
  return { kind: "exec", command: original };
}

/** Whether the certificate's command list lets the login run what it asks for. */
function commandDecision(facts: LoginFacts): CommandDecision {
  try {
    const certificate = readSshCertificate(facts.certificate ?? "");
    return decideCommand(allowlistOf(certificate), facts.kind === "shell" ? undefined : facts.command);
  } catch {
    return { allowed: false, message: "the login's certificate cannot be read" };
  }
}

/** The parent pid of `pid`, from `/proc/<pid>/stat` (the command name may hold blanks and parentheses). */
function parentOf(stat: string): number {
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
}

export async function readLoginFacts(pid: number, procRoot = "/proc"): Promise<LoginFacts> {
  if (!Number.isSafeInteger(pid) || pid <= 1) throw new Error("not a process id");
  const stat = await readFile(`${procRoot}/${pid}/stat`, "utf8");
  const sshdPid = parentOf(stat);
  const parent = (await readFile(`${procRoot}/${sshdPid}/comm`, "utf8")).trim();
  if (parent !== "sshd" && parent !== "sshd-session") {
    throw new Error("the process was not started by sshd");
  }
  const env = parseEnviron(await readFile(`${procRoot}/${pid}/environ`));
  const username = env.get("USER") ?? "";
  const authFile = env.get("SSH_USER_AUTH");
  let certificate: string | undefined;
  if (authFile?.startsWith("/")) {
    const text = await readFile(authFile).catch(() => undefined);
    if (text && text.length <= loginLimits.authInfoBytes)
      certificate = certificateOfAuthInfo(text.toString("utf8"));
  }
  return {
    username,
    certificate,
    ...kindOf(env.get("SSH_ORIGINAL_COMMAND")),
    tty: env.has("SSH_TTY"),
    clientAddress: clientAddressOf(env.get("SSH_CONNECTION")),
    sshdPid,
  };
}

const kindToWire = { shell: SessionKind.SHELL, exec: SessionKind.EXEC, subsystem: SessionKind.SUBSYSTEM };

function send(socket: Socket, message: Record<string, unknown>): void {
  if (!socket.destroyed) socket.write(`${JSON.stringify(message)}\n`);
}

function kill(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // gone already
  }
}

export class SshLoginServer {
  readonly #options: SshLoginServerOptions;
  readonly #logins = new Map<string, Login>();
  #server: Server | undefined;
  /** Set while the agent stops: its logins are left to the daemon's policy, not killed. */
  #closing = false;

  constructor(options: SshLoginServerOptions) {
    this.#options = options;
  }

  /** Listens on the socket: a folder only root writes, the socket itself open to every local user. */
  async start(): Promise<void> {
    const path = this.#options.socketPath;
    await mkdir(dirname(path), { recursive: true, mode: 0o755 });
    await rm(path, { force: true });
    const server = createServer((socket) => this.#accept(socket));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(path, () => resolve());
    });
    // The wrappers run as the users who log in.
    await chmod(path, 0o666);
    this.#server = server;
  }

  /** The live logins' session ids. */
  live(): string[] {
    return [...this.#logins.keys()];
  }

  /** A login kept offline was registered: from now on it answers to the server's id. */
  adopt(spooled: SpooledLogin): void {
    const login = [...this.#logins.values()].find((l) => l.spooled === spooled);
    if (!login || login.ended || spooled.sessionId === undefined) return;
    this.#logins.delete(login.id);
    login.id = spooled.sessionId;
    this.#logins.set(login.id, login);
    this.#options.log({ level: "info", msg: "ssh login held offline: registered", sessionId: login.id });
  }

  /** Ends a login the server says must end (`terminateSession`); unknown ids are ignored. */
  terminate(sessionId: string, reason: string): boolean {
    const login = this.#logins.get(sessionId);
    if (!login || login.terminating !== undefined) return false;
    login.terminating = reason;
    this.#options.log({ level: "info", msg: "ssh login terminated", sessionId, reason });
    send(login.socket, { type: "terminate", reason });
    setTimeout(() => this.#killLogin(login), loginLimits.terminateGraceMs).unref();
    return true;
  }

  async close(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    this.#closing = true;
    for (const login of this.#logins.values()) login.socket.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
    await rm(this.#options.socketPath, { force: true });
  }

  #killLogin(login: Login): void {
    kill(-login.pid, "SIGKILL");
    kill(login.pid, "SIGKILL");
    // The sshd process of the login: its end closes the connection and hangs up the terminal.
    kill(login.facts.sshdPid, "SIGTERM");
  }

  #accept(socket: Socket): void {
    let pending = "";
    let login: Login | undefined;
    let begun = false;
    socket.setEncoding("utf8");
    socket.on("error", () => {});
    socket.on("data", (chunk: string) => {
      pending += chunk;
      if (pending.length > 64 * 1024) return socket.destroy();
      for (let nl = pending.indexOf("\n"); nl >= 0; nl = pending.indexOf("\n")) {
        const text = pending.slice(0, nl);
        pending = pending.slice(nl + 1);
        let message: Record<string, unknown>;
        try {
          message = JSON.parse(text) as Record<string, unknown>;
        } catch {
          return socket.destroy();
        }
        if (message.type === "begin" && !begun) {
          begun = true;
          const size = { cols: Number(message.cols), rows: Number(message.rows) };
          void this.#begin(socket, Number(message.pid), size).then((l) => {
            login = l;
          });
        } else if (message.type === "o" && login?.recording && typeof message.d === "string") {
          login.recording.output(Buffer.from(message.d, "base64"));
        } else if ((message.type === "f" || message.type === "sftp-end") && login?.recording) {
          login.recording.sftpReport(message);
        } else if (message.type === "r" && login?.recording) {
          login.recording.resize(message.cols, message.rows);
        } else if (message.type === "end" && login) {
          void this.#end(login, {
            exitStatus: Number.isSafeInteger(message.exitStatus) ? (message.exitStatus as number) : -1,
            bytesIn: counter(message.bytesIn),
            bytesOut: counter(message.bytesOut),
            reason: login.terminating ?? `the login ended (exit ${String(message.exitStatus)})`,
          });
        }
      }
    });
    socket.on("close", () => {
      if (!login || login.ended || this.#closing) return;
      // Gone without saying how it ended: killed, or the user's doing. What is left goes too.
      this.#killLogin(login);
      void this.#end(login, {
        exitStatus: -1,
        bytesIn: 0,
        bytesOut: 0,
        reason: login.terminating ?? "the session wrapper ended without a report",
      });
    });
  }

  async #begin(
    socket: Socket,
    pid: number,
    size: { cols: number; rows: number },
  ): Promise<Login | undefined> {
    const { log, events, client } = this.#options;
    const refuse = (reason: string) => {
      log({ level: "warn", msg: "ssh login refused", pid, reason });
      events.refused({ pid, reason });
      send(socket, { type: "refused", reason });
      socket.end();
      return undefined;
    };
    let facts: LoginFacts;
    try {
      facts = await readLoginFacts(pid, this.#options.procRoot);
    } catch (error) {
      return refuse(`the login cannot be identified: ${explain(error)}`);
    }
    if (facts.certificate === undefined) {
      // The user's own key (authorized_keys): not the platform's to register.
      send(socket, { type: "unmanaged" });
      socket.end();
      return undefined;
    }
    if (this.#logins.size >= loginLimits.maxLogins) return refuse(`${loginLimits.maxLogins} logins are live`);
    let sessionId: string;
    let record = false;
    let spooled: SpooledLogin | undefined;
    let requireRecording = this.#options.requireRecording();
    try {
      const res = await client.daemons.beginSSHSession(
        {
          certificate: facts.certificate,
          username: facts.username,
          clientAddress: facts.clientAddress,
          kind: kindToWire[facts.kind],
          command: facts.command,
          tty: facts.tty,
        },
        { timeoutMs: loginLimits.beginTimeoutMs },
      );
      sessionId = res.sessionId;
      record = res.record;
      requireRecording = res.requireRecording;
    } catch (error) {
      if (isRefusal(error) || this.#options.requireRecording()) {
        return refuse(explain(error));
      }
      // The server cannot be reached and the daemon lets unregistered logins in, still only
      // within the command list the certificate carries (the server applies it when reachable).
      const decision = commandDecision(facts);
      if (!decision.allowed) return refuse(decision.message);
      spooled = await this.#hold(facts);
      sessionId = `local-${spooled?.login.offlineId ?? randomUUID()}`;
      record = spooled?.login.recorded ?? false;
      log({
        level: "warn",
        msg: spooled
          ? "ssh login held offline: the server cannot be reached"
          : "ssh login not registered: the server cannot be reached",
        error: explain(error),
        ...(!spooled && { spool: "full" }),
      });
    }
    if (socket.destroyed) return undefined;
    const recording = record
      ? new LoginRecording({
          sessionId,
          client,
          log,
          kind: facts.kind,
          command: facts.command,
          tty: facts.tty,
          size,
          requireRecording,
          onCannotStore: (reason) => this.terminate(sessionId, reason),
          ...(spooled && { spool: spooled }),
        })
      : undefined;
    const login: Login = { id: sessionId, pid, facts, socket, recording, spooled, ended: false };
    this.#logins.set(sessionId, login);
    send(socket, { type: "ok", sessionId, record });
    log({
      level: "info",
      msg: "ssh login begun",
      sessionId,
      username: facts.username,
      kind: facts.kind,
      pid,
    });
    events.begun({ sessionId, username: facts.username, kind: facts.kind, pid });
    return login;
  }

  /** Keeps the login in the spool; undefined when there is none or it is full. */
  async #hold(facts: LoginFacts): Promise<SpooledLogin | undefined> {
    const { spool, log } = this.#options;
    if (!spool || facts.certificate === undefined) return undefined;
    const { certificate, username, kind, command, tty, clientAddress } = facts;
    try {
      return await spool.begin(
        { certificate, username, kind, command, tty, clientAddress },
        this.#options.recordSessions(),
      );
    } catch (error) {
      log({ level: "error", msg: "ssh spool: the login cannot be written", error: explain(error) });
      return undefined;
    }
  }

  async #end(
    login: Login,
    end: { exitStatus: number; bytesIn: number; bytesOut: number; reason: string },
  ): Promise<void> {
    if (login.ended) return;
    login.ended = true;
    this.#logins.delete(login.id);
    this.#options.events.ended({ sessionId: login.id, reason: end.reason });
    this.#options.log({ level: "info", msg: "ssh login ended", sessionId: login.id, ...end });
    if (login.spooled) {
      await login.recording?.finish(end.exitStatus);
      try {
        login.spooled.writeEnd({
          endedAt: new Date().toISOString(),
          ...end,
          reason: login.spooled.gap
            ? `${end.reason}; the recording stops early: the agent's spool was full`
            : end.reason,
        });
      } catch (error) {
        // Found at the next start without an end, it is registered as one whose end is unknown.
        this.#options.log({
          level: "error",
          msg: "ssh spool: the end cannot be written",
          error: explain(error),
        });
      }
      void this.#options.spool?.drain();
      return;
    }
    if (login.id.startsWith("local-")) return;
    await login.recording?.finish(end.exitStatus);
    try {
      await this.#options.client.daemons.endSSHSession(
        {
          sessionId: login.id,
          exitStatus: end.exitStatus,
          bytesIn: BigInt(end.bytesIn),
          bytesOut: BigInt(end.bytesOut),
          reason: end.reason.slice(0, 512),
        },
        { timeoutMs: loginLimits.beginTimeoutMs },
      );
    } catch (error) {
      this.#options.log({
        level: "warn",
        msg: "ssh login end not reported",
        sessionId: login.id,
        error: explain(error),
      });
    }
  }
}

function counter(value: unknown): number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0 ? value : 0;
}
