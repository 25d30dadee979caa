/**
 * A simulated agent daemon: what a machine enrolled in a workspace does, over the same RPCs and
 * in the same order as the real one, so the protocol can be read (and tested) end to end.
 *
 *   1. A P-256 key, created once and kept in `<state>/state.json` (wrapped with a key derived
 *      from the machine id, as the real daemon does without a TPM).
 *   2. `EnrollDaemon` with the workspace's enrolment token: `auth_pubkey` registers the key;
 *      `AlreadyExists` means "already enrolled". From then on every call is signed
 *      (`Authorization: Platform <id>:<ts>:<nonce>:<procedure>:<sig>`).
 *   3. `SyncDaemon` (users, `ip:port` endpoints, metadata) and a host certificate
 *      (`SignSSHCertificate` HOST, with no target and no TTL), at start, after every reconnect
 *      of the control stream, on PRINCIPALS / SYNC_REQUEST notifications and every 12 hours.
 *   4. The control stream `DaemonControlService/Connect`: no first message, a heartbeat every
 *      5 minutes, reconnects with backoff (1 s doubling to 30 s, reset after a stream of 5 s).
 *   5. A `session` push opens `DaemonSessionService/Session`: `ready` first, then the terminal's
 *      output as `stdout`; `stdin`, `resize` and `close` come back.
 *
 * It does not switch users, run an SSH server or record sessions: the shell (`--shell`) runs as
 * whoever started this process, through a pty made by util-linux `script`.
 *
 * Run against `pnpm start`:
 *
 *     node --conditions=dev-source --import tsx examples/simulated-daemon.ts \
 *       --url http://127.0.0.1:8080 --enroll <token> [--state <dir>] [--shell|--echo]
 *
 * @module
 */
import { type ChildProcess, execFile, execFileSync, spawn } from "node:child_process";
import {
  createHmac,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
} from "node:crypto";
import { EventEmitter } from "node:events";
import { mkdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { arch, hostname as machineHostname, networkInterfaces, platform, userInfo } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { create } from "@bufbuild/protobuf";
import {
  type ConnectRequest,
  ConnectRequestSchema,
  DaemonStatus,
  type Notification,
  Notification_EventType,
  NotificationSchema,
  type Session,
  type SessionRequest,
  SessionRequestSchema,
  SignSSHCertificateRequest_CertificateType,
} from "@wap/api";
import { Code, ConnectError, createDaemonClient, createPlatformSigner, type DaemonClient } from "@wap/client";

// ---------------------------------------------------------------------------------------------
// Options, events and the handle
// ---------------------------------------------------------------------------------------------

export interface SimulatedDaemonOptions {
  /** The platform server, e.g. `http://127.0.0.1:8080`. */
  readonly url: string;
  /** The workspace's enrolment token (RefreshEnrollToken). Without it, the state dir must hold an enrolment. */
  readonly enrollToken?: string;
  /** Where the key, the enrolment and the principal cache live. */
  readonly stateDir: string;
  /** `echo` (default): a scripted terminal. `shell`: a real /bin/sh as the current user. */
  readonly terminal?: "echo" | "shell";
  /** The local accounts reported to SyncDaemon; by default read from `getent passwd`. */
  readonly users?: readonly string[];
  /** Reported as `Platform-Daemon-Hostname` and `metadata.hostname`; the machine's by default. */
  readonly hostname?: string;
  /** Between heartbeats on the control stream; 5 minutes by default, the first one after one interval. */
  readonly heartbeatIntervalMs?: number;
  /** The port of the (here imaginary) embedded SSH server, reported with each address. */
  readonly sshPort?: number;
  readonly version?: string;
  /** Where log lines go; stdout by default. */
  readonly log?: (line: string) => void;
}

/** What the daemon did, for tests and for watching it work. */
export interface SimulatedDaemonEvents {
  enrolled: [{ id: string; workspaceId: string; targetId: string }];
  synced: [{ status: DaemonStatus; principals: ReadonlyMap<string, readonly string[]> }];
  "host-certificate": [{ principals: readonly string[]; validBefore: Date } | { error: string }];
  "control-stream": [{ state: "opening" | "closed"; error?: string }];
  heartbeat: [];
  notification: [Notification];
  "session-started": [{ sessionId: string; username: string; userId: string }];
  "session-refused": [{ sessionId: string; reason: string }];
  "session-resized": [{ sessionId: string; cols: number; rows: number }];
  "session-ended": [{ sessionId: string; reason: string }];
  rejected: [];
  log: [string];
}

export interface SimulatedDaemon {
  readonly id: string;
  readonly workspaceId: string;
  readonly targetId: string;
  readonly events: EventEmitter<SimulatedDaemonEvents>;
  /** The `username -> subject ids` map from the last SyncDaemon. */
  principals(): ReadonlyMap<string, readonly string[]>;
  /** Ids of the terminal sessions running now. */
  sessions(): readonly string[];
  /** Ends every session and the control stream, and closes the connection. */
  stop(): Promise<void>;
  /** Settles when the daemon has stopped: exit code 1 when it was rejected, else 0. */
  readonly done: Promise<{ exitCode: number; reason: string }>;
}

/** The daemon has no enrolment (the real one logs "daemon not enrolled" and exits 0). */
export class DaemonNotEnrolledError extends Error {
  constructor() {
    super("daemon not enrolled: pass --enroll <token> (DaemonService.RefreshEnrollToken gives one)");
    this.name = "DaemonNotEnrolledError";
  }
}

// The real daemon's constants (docs/agent-protocol.md).
const enrollTimeoutMs = 30_000;
const syncAllTimeoutMs = 15_000;
const sessionTimeoutMs = 8 * 60 * 60 * 1000;
const sessionIdleMs = 30 * 60 * 1000;
const fullSyncEveryMs = 12 * 60 * 60 * 1000;
const backoffStartMs = 1_000;
const backoffMaxMs = 30_000;
/** A stream that lasted this long resets the backoff. */
const stableStreamMs = 5_000;
const maxSessions = 100;
const maxChunkBytes = 32 * 1024;
/** How long the output of a shell that exited may take to go out before the stream is cancelled. */
const flushTimeoutMs = 2_000;
/** Output is limited to 512 KiB/s with a 64 KiB burst. */
const outputBytesPerSecond = 512 * 1024;
const outputBurstBytes = 64 * 1024;
/** A host certificate is renewed when it expires within this. */
const renewBeforeMs = 7 * 24 * 60 * 60 * 1000;
const certificateRetryMs = 30_000;
const usernamePattern = /^[a-z_][a-z0-9_-]{0,31}$/;

// ---------------------------------------------------------------------------------------------
// Start
// ---------------------------------------------------------------------------------------------

/** Enrols if a token is given, syncs, then runs the control stream until stopped or rejected. */
export async function startSimulatedDaemon(options: SimulatedDaemonOptions): Promise<SimulatedDaemon> {
  const events = new EventEmitter<SimulatedDaemonEvents>();
  const log = (line: string) => {
    events.emit("log", line);
    (options.log ?? ((l) => console.log(`${new Date().toISOString()} ${l}`)))(line);
  };
  const machine = describeMachine(options);
  const files = stateFiles(options.stateDir);
  const keys = loadOrCreateKeys(files, machine.machineId);

  // 1-2. Enrolment. On an already enrolled machine the call is signed, which is how the server
  // knows it is the same daemon (and answers AlreadyExists).
  let config = readJson<DaemonConfigFile>(files.config);
  if (options.enrollToken) {
    const client = clientFor(options, machine, keys.signing, config?.daemonId);
    try {
      const res = await client.daemons.enrollDaemon(
        { token: options.enrollToken, caId: "", authMethod: "soft", authPubkey: keys.signingPublicPem },
        { timeoutMs: enrollTimeoutMs },
      );
      if (!res.id || !res.workspaceId || !res.targetId) {
        throw new Error("failed to enroll: the response has an empty id, workspace id or target id");
      }
      config = {
        apiUrl: options.url,
        daemonId: res.id,
        workspaceId: res.workspaceId,
        targetId: res.targetId,
        recordSessions: res.config?.recordSessions ?? false,
      };
      writeJson(files.config, config);
      // `status` is ignored, as the real daemon does: the server enforces it.
      log(`enrolled as daemon ${res.id} (target ${res.targetId}), ${DaemonStatus[res.status]}`);
      events.emit("enrolled", { id: res.id, workspaceId: res.workspaceId, targetId: res.targetId });
    } catch (error) {
      if (!(error instanceof ConnectError && error.code === Code.AlreadyExists)) throw error;
      log("already enrolled: keeping the local configuration");
    } finally {
      client.close();
    }
  }
  if (!config) throw new DaemonNotEnrolledError();
  const enrolled = config;
  const client = clientFor(options, machine, keys.signing, enrolled.daemonId);

  // Everything the running daemon holds.
  const stopping = new AbortController();
  let principals = loadPrincipals(files.cache);
  const sessions = new Map<string, RunningSession>();
  const timers = new Set<NodeJS.Timeout>();
  let finish!: (result: { exitCode: number; reason: string }) => void;
  const done = new Promise<{ exitCode: number; reason: string }>((resolveDone) => {
    finish = resolveDone;
  });
  const later = (ms: number, run: () => void) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      run();
    }, ms);
    timers.add(timer);
    return timer;
  };
  // The certificate watcher: one wake-up at a time.
  let certificateWatch: NodeJS.Timeout | undefined;
  const watchCertificate = (ms: number) => {
    if (certificateWatch) {
      clearTimeout(certificateWatch);
      timers.delete(certificateWatch);
    }
    certificateWatch = later(ms, () => {
      if (hostCertificateOutdated()) void renewHostCertificate();
    });
  };

  // 3. SyncDaemon: report the machine, get back the status and who may log in as whom.
  async function syncDaemon(timeoutMs?: number): Promise<void> {
    const res = await client.daemons.syncDaemon(
      { users: machine.users, privateIps: machine.endpoints, metadata: machine.metadata },
      timeoutMs === undefined ? {} : { timeoutMs },
    );
    // The map is replaced, never merged: an empty list revokes every login.
    const next = new Map<string, string[]>();
    for (const { username, ids } of res.principals) {
      if (usernamePattern.test(username)) next.set(username, [...ids]);
    }
    principals = next;
    writeJson(files.cache, Object.fromEntries(principals));
    if (res.config && res.config.recordSessions !== enrolled.recordSessions) {
      enrolled.recordSessions = res.config.recordSessions;
      writeJson(files.config, enrolled);
    }
    const logins = [...principals].map(([user, ids]) => `${user}: ${ids.length}`).join(", ") || "none";
    log(`synced (${DaemonStatus[res.status]}): logins ${logins}`);
    events.emit("synced", { status: res.status, principals });
  }

  // 3b. The host certificate: signed by the target's CA for the principal `target_id`.
  async function renewHostCertificate(timeoutMs?: number): Promise<void> {
    try {
      const res = await client.certificates.signSSHCertificate(
        {
          type: SignSSHCertificateRequest_CertificateType.HOST,
          workspaceId: enrolled.workspaceId,
          publicKey: keys.hostPublicKey,
        },
        timeoutMs === undefined ? {} : { timeoutMs },
      );
      const certificate = checkHostCertificate(res.signedCertificate, res.caPublicKey, keys.hostPublicKey);
      writeFileSync(files.hostCertificate, `${res.signedCertificate.trim()}\n`);
      writeFileSync(files.trustedCa, res.caPublicKey);
      log(
        `host certificate from CA ${res.caName || res.caId}: principals ${certificate.principals.join(",")}, ` +
          `valid until ${certificate.validBefore.toISOString()}`,
      );
      events.emit("host-certificate", certificate);
      // The watcher wakes up when the certificate enters its last 7 days (at least 30 s from now).
      watchCertificate(
        Math.max(certificateRetryMs, certificate.validBefore.getTime() - renewBeforeMs - Date.now()),
      );
    } catch (error) {
      log(`host certificate not signed (retrying in 30 s): ${explain(error)}`);
      events.emit("host-certificate", { error: explain(error) });
      watchCertificate(certificateRetryMs);
    }
  }

  function hostCertificateOutdated(): boolean {
    try {
      const certificate = parseSshCertificate(readFileSync(files.hostCertificate, "utf8"));
      const now = Date.now();
      return (
        certificate.principals.length !== 1 ||
        certificate.principals[0] !== enrolled.targetId ||
        certificate.validAfter.getTime() > now ||
        certificate.validBefore.getTime() - now < renewBeforeMs
      );
    } catch {
      return true; // missing or unreadable
    }
  }

  /** SyncDaemon, then the host certificate if outdated, then (for a real sshd) a reload: 15 s in all. */
  async function syncAll(): Promise<void> {
    const deadline = Date.now() + syncAllTimeoutMs;
    const left = () => Math.max(1, deadline - Date.now());
    try {
      await syncDaemon(left());
      if (hostCertificateOutdated()) await renewHostCertificate(left());
    } catch (error) {
      log(`sync failed: ${explain(error)}`);
    }
  }

  // 4. Notifications go to one serial worker whose queue holds one item: a second one arriving
  // while one waits replaces both with SYNC_REQUEST (so a STATUS can be lost, as in the real one).
  let working = false;
  let waiting: Notification | undefined;
  function enqueue(notification: Notification): void {
    waiting = waiting
      ? create(NotificationSchema, { eventType: Notification_EventType.SYNC_REQUEST })
      : notification;
    if (!working) void drain();
  }
  async function drain(): Promise<void> {
    working = true;
    while (waiting && !stopping.signal.aborted) {
      const next = waiting;
      waiting = undefined;
      await handleNotification(next).catch((error) => log(`notification failed: ${explain(error)}`));
    }
    working = false;
  }
  async function handleNotification(notification: Notification): Promise<void> {
    events.emit("notification", notification);
    switch (notification.eventType) {
      case Notification_EventType.PRINCIPALS:
        return syncDaemon();
      case Notification_EventType.CERTIFICATES:
        // Only an outdated certificate is renewed, and sshd sees it at the next full sync.
        if (hostCertificateOutdated()) await renewHostCertificate();
        return;
      case Notification_EventType.SYNC_REQUEST:
        return syncAll();
      case Notification_EventType.STATUS:
        // Only our own rejection counts; ACCEPTED and the rest are ignored.
        if (notification.daemonId === enrolled.daemonId && notification.status === DaemonStatus.REJECTED) {
          log("this daemon was rejected: forgetting the enrolment and exiting");
          rmSync(files.config, { force: true });
          rmSync(files.cache, { force: true });
          events.emit("rejected");
          await shutDown(1, "rejected");
        }
        return;
      default:
        log(`notification ${notification.eventType} ignored`);
    }
  }

  // 4b. The control stream, reopened forever whatever the error (Unauthenticated included).
  async function runControlStream(): Promise<void> {
    const stream = new AbortController();
    const stop = () => stream.abort();
    stopping.signal.addEventListener("abort", stop, { once: true });
    events.emit("control-stream", { state: "opening" });
    try {
      const requests = heartbeats(options.heartbeatIntervalMs ?? 5 * 60 * 1000, stream.signal, () =>
        events.emit("heartbeat"),
      );
      for await (const message of client.daemonControl.connect(requests, { signal: stream.signal })) {
        switch (message.msg.case) {
          case "heartbeatAck":
            break; // nothing, not even a log line
          case "notification":
            enqueue(message.msg.value);
            break;
          case "session":
            void startSession(message.msg.value);
            break;
        }
      }
    } finally {
      stopping.signal.removeEventListener("abort", stop);
      stream.abort();
    }
  }

  async function controlLoop(): Promise<void> {
    let backoffMs = backoffStartMs;
    while (!stopping.signal.aborted) {
      const openedAt = Date.now();
      let error: string | undefined;
      try {
        await runControlStream();
      } catch (cause) {
        error = explain(cause);
      }
      if (stopping.signal.aborted) return;
      if (Date.now() - openedAt >= stableStreamMs) backoffMs = backoffStartMs;
      log(`control stream ended${error ? `: ${error}` : ""}; reconnecting in ${backoffMs / 1000} s`);
      events.emit("control-stream", { state: "closed", ...(error && { error }) });
      await sleep(backoffMs, stopping.signal);
      backoffMs = Math.min(backoffMs * 2, backoffMaxMs);
      if (!stopping.signal.aborted) await syncAll();
    }
  }

  // 5. Terminal sessions.
  async function startSession(push: Session): Promise<void> {
    const { sessionId, username, userId } = push;
    // Any failed check: log and do nothing. The server times the session out on its own.
    const refuse = (reason: string) => {
      log(`session ${sessionId} refused: ${reason}`);
      events.emit("session-refused", { sessionId, reason });
    };
    if (sessions.size >= maxSessions) return refuse(`${maxSessions} sessions are running`);
    if (!principals.get(username)?.includes(userId)) {
      return refuse(`${userId} may not log in as ${username} (not in the last sync)`);
    }
    if (!machine.users.includes(username)) return refuse(`there is no local user ${username}`);
    const session = runSession(push, {
      client,
      terminal: options.terminal ?? "echo",
      hostname: machine.hostname,
      log,
      events,
    });
    sessions.set(sessionId, session);
    await session.ended;
    sessions.delete(sessionId);
  }

  let stopped: Promise<void> | undefined;
  function shutDown(exitCode: number, reason: string): Promise<void> {
    stopped ??= (async () => {
      stopping.abort();
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      await Promise.all([...sessions.values()].map((s) => s.end("the daemon is stopping")));
      client.close();
      finish({ exitCode, reason });
    })();
    return stopped;
  }

  log(`daemon ${enrolled.daemonId} on ${machine.hostname}, server ${options.url}`);
  await syncAll();
  const fullSync = setInterval(() => void syncAll(), fullSyncEveryMs);
  fullSync.unref();
  stopping.signal.addEventListener("abort", () => clearInterval(fullSync), { once: true });
  void controlLoop();

  return {
    id: enrolled.daemonId,
    workspaceId: enrolled.workspaceId,
    targetId: enrolled.targetId,
    events,
    principals: () => principals,
    sessions: () => [...sessions.keys()],
    stop: () => shutDown(0, "stopped"),
    done,
  };
}

/** Heartbeat{} every `intervalMs`, the first one only after one interval, until `signal` aborts. */
async function* heartbeats(
  intervalMs: number,
  signal: AbortSignal,
  sent: () => void,
): AsyncGenerator<ConnectRequest> {
  for (;;) {
    await sleep(intervalMs, signal);
    if (signal.aborted) return;
    yield create(ConnectRequestSchema, { msg: { case: "heartbeat", value: {} } });
    sent();
  }
}

// ---------------------------------------------------------------------------------------------
// A terminal session: DaemonSessionService/Session
// ---------------------------------------------------------------------------------------------

interface RunningSession {
  readonly ended: Promise<void>;
  end(reason: string): Promise<void>;
}

function runSession(
  push: Session,
  context: {
    client: DaemonClient;
    terminal: "echo" | "shell";
    hostname: string;
    log: (line: string) => void;
    events: EventEmitter<SimulatedDaemonEvents>;
  },
): RunningSession {
  const { sessionId, username, userId } = push;
  const { client, log, events } = context;
  const stream = new AbortController();
  const outgoing = new MessageQueue<SessionRequest>();
  const output = new TokenBucket(outputBytesPerSecond, outputBurstBytes);
  let terminal: Terminal | undefined;
  let idle: NodeJS.Timeout | undefined;
  let finished = false;
  let endedResolve!: () => void;
  const ended = new Promise<void>((r) => {
    endedResolve = r;
  });

  const touch = () => {
    clearTimeout(idle);
    idle = setTimeout(() => void end("30 minutes without input or output"), sessionIdleMs);
  };
  async function end(reason: string, options: { flush?: boolean } = {}): Promise<void> {
    if (finished) return ended;
    finished = true;
    clearTimeout(idle);
    // Kill the shell, then cancel the stream: the server sees a reset, its normal end of a
    // session. (The real daemon tries to send `exited` only after cancelling, so it never arrives.)
    await terminal?.kill();
    // A shell that exited has its last output read to the end and sent first.
    if (options.flush) await Promise.race([outgoing.drained(), sleep(flushTimeoutMs, stream.signal)]);
    stream.abort();
    outgoing.end();
    log(`session ${sessionId} ended: ${reason}`);
    events.emit("session-ended", { sessionId, reason });
    endedResolve();
  }

  // `ready` is the first message: it is how the server matches this stream to the session.
  outgoing.push(
    create(SessionRequestSchema, { msg: { case: "ready", value: { sessionId, username, userId } } }),
  );

  async function* requests(): AsyncGenerator<SessionRequest> {
    for await (const message of outgoing) {
      if (message.msg.case === "stdout") await output.take(message.msg.value.length, stream.signal);
      if (stream.signal.aborted) return;
      yield message;
      if (outgoing.bytes < maxChunkBytes * 4) terminal?.resume();
    }
  }

  const sendOutput = (data: Uint8Array) => {
    touch();
    for (let at = 0; at < data.length; at += maxChunkBytes) {
      const chunk = data.subarray(at, at + maxChunkBytes);
      outgoing.push(create(SessionRequestSchema, { msg: { case: "stdout", value: chunk } }));
    }
    // Back-pressure: stop reading the terminal while the server is slower than its output.
    if (outgoing.bytes >= maxChunkBytes * 32) terminal?.pause();
  };

  void (async () => {
    try {
      // The stream opens first (8 h deadline), then the shell starts.
      const responses = client.daemonSessions.session(requests(), {
        signal: stream.signal,
        timeoutMs: sessionTimeoutMs,
      });
      const io: TerminalIo = { output: sendOutput, exit: (why) => void end(why, { flush: true }) };
      terminal =
        context.terminal === "shell"
          ? startShellTerminal(io)
          : startEchoTerminal(io, { username, hostname: context.hostname });
      log(`session ${sessionId} started for ${username} (${context.terminal})`);
      events.emit("session-started", { sessionId, username, userId });
      touch();
      for await (const message of responses) {
        switch (message.msg.case) {
          case "stdin":
            touch();
            terminal.write(message.msg.value);
            break;
          case "resize": {
            const { width, height } = message.msg.value;
            if (width > 0 && height > 0 && width <= 10_000 && height <= 10_000) {
              terminal.resize(width, height);
              events.emit("session-resized", { sessionId, cols: width, rows: height });
            }
            break;
          }
          case "close":
            return await end(
              `closed by the server${message.msg.value.reason ? `: ${message.msg.value.reason}` : ""}`,
            );
        }
      }
      await end("the server ended the stream");
    } catch (error) {
      await end(finished ? "ended" : `the stream failed: ${explain(error)}`);
    }
  })();

  return { ended, end };
}

// ---------------------------------------------------------------------------------------------
// Terminals
// ---------------------------------------------------------------------------------------------

interface TerminalIo {
  output(data: Uint8Array): void;
  exit(reason: string): void;
}

interface Terminal {
  write(data: Uint8Array): void;
  resize(cols: number, rows: number): void;
  pause(): void;
  resume(): void;
  kill(): Promise<void>;
}

/**
 * /bin/sh in a pty that util-linux `script` makes (so no native pty module is needed). The pty's
 * size is set with `stty -F` on the shell's terminal, which sends it SIGWINCH like a real resize.
 */
function startShellTerminal(io: TerminalIo): Terminal {
  const me = userInfo();
  const child: ChildProcess = spawn("script", ["-qfec", "/bin/sh", "/dev/null"], {
    stdio: ["pipe", "pipe", "ignore"],
    // A clean environment: nothing of the daemon's own (an enrolment token, say) reaches the shell.
    env: {
      TERM: "xterm-256color",
      HOME: me.homedir,
      USER: me.username,
      LOGNAME: me.username,
      SHELL: "/bin/sh",
      PATH: "/usr/local/bin:/usr/bin:/bin",
      LANG: process.env.LANG ?? "C.UTF-8",
    },
  });
  let size = { cols: 80, rows: 24 };
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  child.stdout!.on("data", (data: Buffer) => io.output(data));
  child.stdin!.on("error", () => {}); // the shell may be gone: its exit ends the session
  // "close", not "exit": by then all of its output has been read.
  child.once("close", (code) => io.exit(`the shell exited (${code ?? "signal"})`));
  const shell = findShellOf(child.pid ?? -1, exited);
  // One stty at a time, with the latest size, so that resizes land in order.
  let sizing = Promise.resolve();
  const applySize = () => {
    sizing = sizing.then(async () => {
      const found = await shell;
      if (!found) return;
      const args = ["-F", found.tty, "rows", String(size.rows), "cols", String(size.cols)];
      await new Promise((done) => execFile("stty", args, done));
    });
  };
  applySize(); // the pty starts at 80x24, like the real daemon's
  return {
    write: (data) => void child.stdin!.write(data),
    resize(cols, rows) {
      size = { cols, rows };
      applySize();
    },
    pause: () => child.stdout!.pause(),
    resume: () => child.stdout!.resume(),
    async kill() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      // Hang up, as a closed terminal does: the shell (which ignores SIGTERM) exits, then `script`.
      const found = await Promise.race([shell, exited]);
      if (found) signalGroup(found.pid, "SIGHUP");
      child.stdin!.end();
      const force = setTimeout(() => {
        if (found) signalGroup(found.pid, "SIGKILL");
        child.kill("SIGKILL");
      }, 2000);
      await exited;
      clearTimeout(force);
    },
  };
}

/** The shell that `script` (pid) runs and its pty (the shell's stdin), once it has started. */
async function findShellOf(
  pid: number,
  exited: Promise<void>,
): Promise<{ pid: number; tty: string } | undefined> {
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  for (let attempt = 0; attempt < 100 && !gone; attempt++) {
    try {
      for (const child of readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/)) {
        const tty = child ? readlinkSync(`/proc/${child}/fd/0`) : "";
        if (tty.startsWith("/dev/pts/")) return { pid: Number(child), tty };
      }
    } catch {
      // not started yet
    }
    await sleep(20);
  }
  return undefined;
}

/** Signals the process group `pid` leads (the shell leads its session), if it is still there. */
function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // already gone
  }
}

/**
 * A scripted terminal: echoes what is typed; on Enter, `stty size` prints the size it was given,
 * `exit` ends the session, anything else is printed back.
 */
function startEchoTerminal(io: TerminalIo, who: { username: string; hostname: string }): Terminal {
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();
  const print = (text: string) => io.output(encoder.encode(text));
  const prompt = `${who.username}@${who.hostname}$ `;
  let size = { cols: 80, rows: 24 };
  let line = "";
  let previous = "";
  let running = true;
  setImmediate(() =>
    print(`Simulated terminal for ${who.username}: type, Enter prints it back, "exit" ends.\r\n${prompt}`),
  );
  const run = (command: string) => {
    const text = command.trim();
    if (text === "exit") {
      running = false;
      io.exit("exit typed");
      return;
    }
    if (text === "stty size") print(`${size.rows} ${size.cols}\r\n`);
    else if (text !== "") print(`${text}\r\n`);
    print(prompt);
  };
  return {
    write(data) {
      for (const ch of decoder.decode(data, { stream: true })) {
        if (!running) return;
        if (ch === "\n" && previous === "\r") {
          // CR LF is one Enter
        } else if (ch === "\r" || ch === "\n") {
          print("\r\n");
          run(line);
          line = "";
        } else if (ch === "\x7f" || ch === "\b") {
          if (line) print("\b \b");
          line = line.slice(0, -1);
        } else if (ch === "\x04") {
          running = false;
          io.exit("end of input");
        } else {
          line += ch;
          print(ch);
        }
        previous = ch;
      }
    },
    resize(cols, rows) {
      size = { cols, rows };
    },
    pause() {},
    resume() {},
    async kill() {
      running = false;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The machine: identity, accounts, addresses
// ---------------------------------------------------------------------------------------------

interface Machine {
  readonly hostname: string;
  readonly machineId: string;
  /** `Platform-Daemon-Fingerprint`. */
  readonly fingerprint: string;
  readonly users: string[];
  readonly endpoints: string[];
  readonly metadata: Record<string, string>;
}

function describeMachine(options: SimulatedDaemonOptions): Machine {
  const hostname = options.hostname ?? machineHostname();
  const machineId = readMachineId() ?? hostname;
  return {
    hostname,
    machineId,
    fingerprint: createHmac("sha256", "machine-id").update(machineId.toLowerCase()).digest("hex"),
    users: options.users ? [...options.users] : localUsers(),
    endpoints: localAddresses().map((ip) => `${ip}:${options.sshPort ?? 4022}`),
    metadata: { hostname, os: goName(platform(), { win32: "windows" }), arch: goName(arch(), goArch) },
  };
}

function readMachineId(): string | undefined {
  for (const path of ["/etc/machine-id", "/var/lib/dbus/machine-id", "/sys/class/dmi/id/product_uuid"]) {
    try {
      const id = readFileSync(path, "utf8").trim();
      if (id) return id;
    } catch {
      // try the next one
    }
  }
  return undefined;
}

/** Up to 20 accounts with uid 0 or >= 1000 and a login shell, as `getent passwd` lists them. */
function localUsers(): string[] {
  let passwd = "";
  try {
    passwd = execFileSync("getent", ["passwd"], { encoding: "utf8" });
  } catch {
    return []; // the real daemon sends an empty list when the command fails
  }
  return passwd
    .split("\n")
    .map((entry) => entry.split(":"))
    .filter(([name, , uid, , , , shell]) => {
      const id = Number(uid);
      const loginShell = !!shell && !/(nologin|false|sync|halt|shutdown)$/.test(shell);
      return !!name && (id === 0 || (id >= 1000 && id !== 65534)) && loginShell;
    })
    .map(([name]) => name!)
    .slice(0, 20);
}

/** Up to 2 IPv4 addresses of real interfaces (no loopback, link-local, docker, veth, bridges, CNI). */
function localAddresses(): string[] {
  const skipped = /^(lo|docker|veth|br-|virbr|cni|flannel|cali|vxlan|kube|lxc|podman)/;
  return Object.entries(networkInterfaces())
    .filter(([name]) => !skipped.test(name))
    .flatMap(([, addresses]) => addresses ?? [])
    .filter((a) => a.family === "IPv4" && !a.internal && !a.address.startsWith("169.254."))
    .map((a) => a.address)
    .slice(0, 2);
}

const goArch: Record<string, string> = { x64: "amd64", ia32: "386", arm64: "arm64", arm: "arm" };
function goName(name: string, names: Record<string, string>): string {
  return names[name] ?? name;
}

function clientFor(
  options: SimulatedDaemonOptions,
  machine: Machine,
  key: KeyObject,
  daemonId: string | undefined,
): DaemonClient {
  return createDaemonClient({
    baseUrl: options.url,
    ...(daemonId && { signer: createPlatformSigner({ id: daemonId, privateKey: key }) }),
    headers: {
      "Platform-Daemon-Hostname": machine.hostname,
      "Platform-Daemon-Version": options.version ?? "0.0.0-simulated",
      "Platform-Daemon-Fingerprint": machine.fingerprint,
    },
  });
}

// ---------------------------------------------------------------------------------------------
// State on disk
// ---------------------------------------------------------------------------------------------

/** `config.json`: what enrolment gave. Cleared when the daemon is rejected. */
interface DaemonConfigFile {
  apiUrl: string;
  daemonId: string;
  workspaceId: string;
  targetId: string;
  recordSessions: boolean;
}

/** `state.json`: the keys, each PKCS#8 encrypted with a passphrase derived from the machine id. */
interface KeysFile {
  signingKey: string;
  hostKey: string;
}

function stateFiles(dir: string) {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return {
    keys: join(dir, "state.json"),
    config: join(dir, "config.json"),
    cache: join(dir, "cache.json"),
    hostCertificate: join(dir, "ssh_host_ed25519_key-cert.pub"),
    trustedCa: join(dir, "platform_ca.pub"),
  };
}

function loadOrCreateKeys(files: ReturnType<typeof stateFiles>, machineId: string) {
  const passphrase = createHmac("sha256", "platform-daemon").update(machineId).digest("hex");
  const seal = (key: KeyObject) =>
    key.export({ type: "pkcs8", format: "pem", cipher: "aes-256-cbc", passphrase }).toString();
  let stored = readJson<KeysFile>(files.keys);
  if (!stored) {
    stored = {
      signingKey: seal(generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey),
      hostKey: seal(generateKeyPairSync("ed25519").privateKey),
    };
    writeJson(files.keys, stored);
  }
  const signing = createPrivateKey({ key: stored.signingKey, passphrase });
  const host = createPrivateKey({ key: stored.hostKey, passphrase });
  return {
    signing,
    signingPublicPem: createPublicKey(signing).export({ type: "spki", format: "pem" }).toString(),
    hostPublicKey: sshEd25519PublicKey(host),
  };
}

function loadPrincipals(path: string): Map<string, string[]> {
  const cached = readJson<Record<string, string[]>>(path) ?? {};
  return new Map(Object.entries(cached));
}

function readJson<T>(path: string): T | undefined {
  try {
    return JSON.parse(readFileSync(path, "utf8")) as T;
  } catch {
    return undefined;
  }
}

function writeJson(path: string, value: unknown): void {
  writeFileSync(path, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
}

// ---------------------------------------------------------------------------------------------
// SSH wire format: the host key line and the certificate fields the daemon checks
// ---------------------------------------------------------------------------------------------

/** `ssh-ed25519 <base64>` with a trailing newline and no comment, as the daemon sends it. */
function sshEd25519PublicKey(privateKey: KeyObject): string {
  const raw = Buffer.from(createPublicKey(privateKey).export({ format: "jwk" }).x!, "base64url");
  return `ssh-ed25519 ${Buffer.concat([sshString("ssh-ed25519"), sshString(raw)]).toString("base64")}\n`;
}

function sshString(value: string | Uint8Array): Buffer {
  const bytes = Buffer.from(value);
  const length = Buffer.alloc(4);
  length.writeUInt32BE(bytes.length);
  return Buffer.concat([length, bytes]);
}

/** The base64 blob of an authorized_keys line. */
function keyBlobOf(line: string): Buffer {
  return Buffer.from(line.trim().split(/\s+/)[1] ?? "", "base64");
}

interface SshCertificate {
  readonly keyType: string;
  readonly certType: number;
  readonly principals: string[];
  readonly validAfter: Date;
  readonly validBefore: Date;
  readonly signatureKey: Buffer;
  readonly key: Buffer;
}

/** Reads an OpenSSH certificate line (PROTOCOL.certkeys) of an Ed25519 key. */
function parseSshCertificate(line: string): SshCertificate {
  const [type, base64] = line.trim().split(/\s+/);
  const blob = Buffer.from(base64 ?? "", "base64");
  let at = 0;
  const bytes = () => {
    const length = blob.readUInt32BE(at);
    const value = blob.subarray(at + 4, at + 4 + length);
    if (value.length !== length) throw new Error("truncated certificate");
    at += 4 + length;
    return value;
  };
  const uint64 = () => {
    const value = blob.readBigUInt64BE(at);
    at += 8;
    return value;
  };
  const keyType = bytes().toString();
  if (keyType !== type || keyType !== "ssh-ed25519-cert-v01@openssh.com") {
    throw new Error(`not an Ed25519 certificate: ${type}`);
  }
  bytes(); // nonce
  const key = bytes();
  uint64(); // serial
  const certType = blob.readUInt32BE(at);
  at += 4;
  bytes(); // key id
  const principalList = bytes();
  const principals: string[] = [];
  for (let p = 0; p < principalList.length; ) {
    const length = principalList.readUInt32BE(p);
    principals.push(principalList.subarray(p + 4, p + 4 + length).toString());
    p += 4 + length;
  }
  const toDate = (seconds: bigint) =>
    new Date(seconds > 8_640_000_000_000n ? 8.64e15 : Number(seconds) * 1000);
  const validAfter = toDate(uint64());
  const validBefore = toDate(uint64());
  bytes(); // critical options
  bytes(); // extensions
  bytes(); // reserved
  const signatureKey = bytes();
  return { keyType, certType, principals, validAfter, validBefore, signatureKey, key };
}

/**
 * What the real daemon checks before saving a host certificate: it is a host certificate for our
 * key, signed by exactly the first key of `ca_public_key` (the CA sshd then trusts for users).
 */
function checkHostCertificate(certificateLine: string, caPublicKey: string, hostPublicKey: string) {
  const certificate = parseSshCertificate(certificateLine);
  if (certificate.certType !== 2) throw new Error("the certificate is not a host certificate");
  // An Ed25519 key blob is string("ssh-ed25519") string(32-byte key); the certificate holds the key.
  const ourKey = keyBlobOf(hostPublicKey).subarray(4 + "ssh-ed25519".length + 4);
  if (!certificate.key.equals(ourKey)) throw new Error("the certificate is for another key");
  const firstCa = caPublicKey.split("\n").find((l) => l.trim() !== "") ?? "";
  if (!certificate.signatureKey.equals(keyBlobOf(firstCa))) {
    throw new Error("certificate not signed by provided CA");
  }
  return { principals: certificate.principals, validBefore: certificate.validBefore };
}

// ---------------------------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------------------------

/** An async-iterable queue of outgoing messages, counting the stdout bytes it holds. */
class MessageQueue<T extends { msg: { case: string | undefined; value?: unknown } }> {
  #items: T[] = [];
  #wake: (() => void) | undefined;
  #ended = false;
  #idle = false;
  #drainedWaiters: Array<() => void> = [];
  bytes = 0;

  push(item: T): void {
    if (this.#ended) return;
    this.#items.push(item);
    this.bytes += sizeOf(item);
    this.#wake?.();
  }

  end(): void {
    this.#ended = true;
    this.#wake?.();
    this.#notifyDrained();
  }

  /** Settles once everything pushed so far has been taken (and the consumer asked for more). */
  drained(): Promise<void> {
    if (this.#items.length === 0 && this.#idle) return Promise.resolve();
    return new Promise((r) => this.#drainedWaiters.push(r));
  }

  #notifyDrained(): void {
    for (const resolveDrained of this.#drainedWaiters.splice(0)) resolveDrained();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T> {
    for (;;) {
      const item = this.#items.shift();
      if (item !== undefined) {
        this.bytes -= sizeOf(item);
        yield item;
        continue;
      }
      if (this.#ended) return;
      this.#idle = true;
      this.#notifyDrained();
      await new Promise<void>((r) => {
        this.#wake = r;
      });
      this.#idle = false;
      this.#wake = undefined;
    }
  }
}

function sizeOf(item: { msg: { value?: unknown } }): number {
  return item.msg.value instanceof Uint8Array ? item.msg.value.length : 0;
}

/** `rate` bytes per second with a burst of `burst`. */
class TokenBucket {
  #tokens: number;
  #at = Date.now();
  constructor(
    private readonly rate: number,
    private readonly burst: number,
  ) {
    this.#tokens = burst;
  }

  async take(n: number, signal: AbortSignal): Promise<void> {
    for (;;) {
      const now = Date.now();
      this.#tokens = Math.min(this.burst, this.#tokens + ((now - this.#at) / 1000) * this.rate);
      this.#at = now;
      if (this.#tokens >= n || signal.aborted) {
        this.#tokens -= n;
        return;
      }
      await sleep(Math.ceil(((n - this.#tokens) / this.rate) * 1000), signal);
    }
  }
}

/** Waits `ms`, or less if `signal` aborts first. */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolveSleep) => {
    if (signal?.aborted) return resolveSleep();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolveSleep();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}

function explain(error: unknown): string {
  if (error instanceof ConnectError) return `${Code[error.code]}: ${error.rawMessage}`;
  return error instanceof Error ? error.message : String(error);
}

// ---------------------------------------------------------------------------------------------
// Command line
// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      url: { type: "string", default: "http://127.0.0.1:8080" },
      enroll: { type: "string" },
      state: { type: "string", default: ".wap-daemon" },
      shell: { type: "boolean", default: false },
      echo: { type: "boolean", default: false },
      users: { type: "string" },
      hostname: { type: "string" },
      "heartbeat-seconds": { type: "string" },
    },
  });
  if (values.shell && values.echo) throw new Error("choose one of --shell and --echo");
  let daemon: SimulatedDaemon;
  try {
    daemon = await startSimulatedDaemon({
      url: values.url,
      // Also from the environment, which keeps the token out of `ps`.
      enrollToken: values.enroll ?? process.env.WAP_ENROLL_TOKEN,
      stateDir: resolve(values.state),
      terminal: values.shell ? "shell" : "echo",
      ...(values.users !== undefined && { users: values.users.split(",").filter(Boolean) }),
      ...(values.hostname !== undefined && { hostname: values.hostname }),
      ...(values["heartbeat-seconds"] !== undefined && {
        heartbeatIntervalMs: Number(values["heartbeat-seconds"]) * 1000,
      }),
    });
  } catch (error) {
    if (error instanceof DaemonNotEnrolledError) {
      console.log(error.message);
      process.exit(0);
    }
    throw error;
  }
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => void daemon.stop());
  const { exitCode } = await daemon.done;
  process.exit(exitCode);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main().catch((error: unknown) => {
    console.error(explain(error));
    process.exit(1);
  });
}
