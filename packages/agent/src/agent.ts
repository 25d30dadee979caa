/**
 * `wap-agent run`: the agent at work. It keeps the control stream open, keeps the sshd files
 * (sshd-files.ts) in step with what the server says, and runs web-terminal sessions.
 *
 * - **Sync** (SyncDaemon, then the host certificate when it is missing, outdated or a
 *   notification asks for it, then the reload command if the host certificate changed) runs at start, each
 *   time a control stream is accepted (whatever changed while the agent was away), on
 *   notifications, and at least every 12 hours or when the host certificate reaches two thirds
 *   of its life. Requests coalesce: one sync at a time, and at most one more queued.
 * - **Revocations**: each sync of an accepted daemon fetches its authority's KRL
 *   (GetRevocationList) into `revoked_keys`; a REVOCATIONS notification asks for a sync.
 * - **Offline**, the files stay as they were: logins keep working with what was last granted.
 * - **SSH logins** (ssh-logins.ts): the session wrapper sshd runs for every login reports to the
 *   agent's socket; the agent registers the login with the server before it runs, and ends it
 *   when the server says so (`terminateSession`). Each sync writes the daemon's policy for
 *   logins that cannot be registered (`login_policy`, sshd-match.ts).
 * - **Ends**: `STATUS REJECTED` for this daemon (principals removed, enrolment forgotten, exit
 *   4); the server refusing the agent's key, because its daemon was deleted or the key is not
 *   the enrolled one (principals removed, exit 3); `stop()` (exit 0).
 *
 * @module
 */
import { exec } from "node:child_process";
import { EventEmitter } from "node:events";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  type ConnectRequest,
  ConnectRequestSchema,
  DaemonStatus,
  type Notification,
  Notification_EventType,
  type Session,
  SignSSHCertificateRequest_CertificateType,
} from "@wap/api";
import type { DaemonClient } from "@wap/client";
import { readIfPresent } from "./atomic-file.js";
import { Backoff, type BackoffOptions } from "./backoff.js";
import { connect } from "./connection.js";
import { exitCodes, explain, isUnauthenticated, NotEnrolledError } from "./errors.js";
import { jsonLineLogger, type Logger } from "./log.js";
import {
  findAccount,
  loginAccounts,
  machineAddresses,
  machineHostname,
  machineMetadata,
  sshdPort,
} from "./machine.js";
import { sleep } from "./message-queue.js";
import { pendingRefusals, refusalsPerSync, reportedRefusals, watchRefusals } from "./principals-check.js";
import { cannotRunAs } from "./pty-shell.js";
import { type RunningSession, runSession } from "./session.js";
import { keyBlobOf, parseSshCertificate, type SshCertificate } from "./ssh-key.js";
import { SshLoginServer } from "./ssh-logins.js";
import { readLoginSettings, SshSpool, spoolLimits, writeLoginSettings } from "./ssh-spool.js";
import { defaultSshdDir, type PrincipalsMap, SshdFiles, usernamePattern } from "./sshd-files.js";
import { prepareLoginControl, writeLoginPolicy } from "./sshd-match.js";
import { AgentState, type Enrolment } from "./state.js";

export const defaultHostKeyFile = "/etc/ssh/ssh_host_ed25519_key.pub";

export interface AgentOptions {
  readonly stateDir: string;
  /** Where the sshd files go; `/etc/ssh/wap` by default. */
  readonly sshdDir?: string;
  /** Run with `/bin/sh -c` after the host certificate changed, e.g. `systemctl reload ssh`. */
  readonly reloadCommand?: string;
  /** `ip:port` addresses sshd listens on; by default the machine's addresses with sshd's Port. */
  readonly sshAddresses?: readonly string[];
  /** The public host key to certify; sshd's Ed25519 key by default. */
  readonly hostKeyFile?: string;
  /** Read for the default port (`Port`). */
  readonly sshdConfigFile?: string;
  /** The accounts reported to the server; those with uid 0 or >= 1000 and a login shell by default. */
  readonly users?: readonly string[];
  readonly hostname?: string;
  readonly log?: Logger;
  readonly backoff?: BackoffOptions;
  /** The Unix socket the session wrappers report SSH logins to; `<stateDir>/sessions.sock` by default. */
  readonly sessionsSocket?: string;
  /** The most the spool of logins begun while the server cannot be reached holds, in bytes (64 MiB). */
  readonly sshSpoolMaxBytes?: number;
  /** Between heartbeats on the control stream (5 minutes). */
  readonly heartbeatIntervalMs?: number;
}

export interface AgentEvents {
  synced: [{ status: DaemonStatus; principals: PrincipalsMap; changed: readonly string[] }];
  "host-certificate": [{ principals: readonly string[]; validBefore: Date }];
  reloaded: [{ ok: boolean }];
  "control-stream": [{ state: "open" | "closed"; error?: string; retryInMs?: number }];
  "session-started": [{ sessionId: string; username: string }];
  "session-refused": [{ sessionId: string; reason: string }];
  "session-resized": [{ sessionId: string; cols: number; rows: number }];
  "session-ended": [{ sessionId: string; reason: string }];
  "ssh-login-begun": [{ sessionId: string; username: string; kind: string; pid: number }];
  "ssh-login-refused": [{ pid: number; reason: string }];
  "ssh-login-ended": [{ sessionId: string; reason: string }];
}

export interface Agent {
  readonly enrolment: Enrolment;
  readonly events: EventEmitter<AgentEvents>;
  readonly files: SshdFiles;
  /** The principals map the files hold. */
  principals(): PrincipalsMap;
  sessions(): readonly string[];
  /** The live SSH logins' session ids. */
  sshLogins(): readonly string[];
  stop(): Promise<void>;
  /** Settles when the agent has ended, with its exit code and why. */
  readonly done: Promise<{ exitCode: number; reason: string }>;
}

const fullSyncEveryMs = 12 * 60 * 60 * 1000;
const syncTimeoutMs = 15_000;
const certificateRetryMs = 30_000;
const heartbeatEveryMs = 5 * 60 * 1000;
const maxSessions = 100;

export async function startAgent(options: AgentOptions): Promise<Agent> {
  const log = options.log ?? jsonLineLogger();
  const state = new AgentState(options.stateDir);
  const enrolment = await state.readEnrolment();
  if (!enrolment) throw new NotEnrolledError(options.stateDir);
  const key = await state.signingKey();
  const files = new SshdFiles(options.sshdDir ?? defaultSshdDir);
  await files.prepare();
  await prepareLoginControl(files.dir);
  const hostname = options.hostname ?? machineHostname();
  const hostKeyFile = options.hostKeyFile ?? defaultHostKeyFile;
  const port = sshdPort(options.sshdConfigFile);
  const endpoints = [...(options.sshAddresses ?? machineAddresses().map((ip) => `${ip}:${port}`))];
  const client: DaemonClient = connect({
    server: enrolment.server,
    key,
    daemonId: enrolment.daemonId,
    hostname,
  });
  const events = new EventEmitter<AgentEvents>();
  const stopping = new AbortController();
  const sessions = new Map<string, RunningSession>();
  let principals: PrincipalsMap = await files.readPrincipals();
  // Certificates sshd's principals command refused are reported (and audited) at once.
  await watchRefusals(files.dir, () => void requestSync(false), stopping.signal);
  // The daemon's recording settings as last synced, kept for logins that begin while the server
  // cannot be reached, also across a restart of the agent.
  let { requireRecording, recordSessions } = await readLoginSettings(options.stateDir);
  const spool = await SshSpool.open({
    dir: join(options.stateDir, "ssh-spool"),
    maxBytes: options.sshSpoolMaxBytes ?? spoolLimits.defaultMaxBytes,
    client,
    log,
    onRegistered: (login) => logins.adopt(login),
  });
  const logins: SshLoginServer = new SshLoginServer({
    // The command line gives /run/wap-agent/sessions.sock; a library caller gets its own.
    socketPath: options.sessionsSocket ?? join(options.stateDir, "sessions.sock"),
    client,
    log,
    requireRecording: () => requireRecording,
    recordSessions: () => recordSessions,
    spool,
    events: {
      begun: (login) => events.emit("ssh-login-begun", login),
      refused: (login) => events.emit("ssh-login-refused", login),
      ended: (login) => events.emit("ssh-login-ended", login),
    },
  });
  await logins.start();
  let finish!: (result: { exitCode: number; reason: string }) => void;
  const done = new Promise<{ exitCode: number; reason: string }>((resolve) => {
    finish = resolve;
  });

  // ---- sync ------------------------------------------------------------------------------

  let queued: { forceCertificate: boolean } | undefined;
  let draining: Promise<void> | undefined;
  let nextSync: NodeJS.Timeout | undefined;

  function requestSync(forceCertificate: boolean): Promise<void> {
    queued = { forceCertificate: forceCertificate || (queued?.forceCertificate ?? false) };
    draining ??= (async () => {
      while (queued && !stopping.signal.aborted) {
        const job = queued;
        queued = undefined;
        await syncOnce(job.forceCertificate).catch((error) =>
          log({ level: "error", msg: "sync failed", error: explain(error) }),
        );
      }
      draining = undefined;
    })();
    return draining;
  }

  function scheduleSync(ms: number): void {
    clearTimeout(nextSync);
    nextSync = setTimeout(() => void requestSync(false), Math.max(1_000, Math.min(ms, fullSyncEveryMs)));
  }

  async function syncOnce(forceCertificate: boolean): Promise<void> {
    const users = options.users ? [...options.users] : await loginAccounts();
    let res: Awaited<ReturnType<DaemonClient["daemons"]["syncDaemon"]>>;
    const pendingReports = await pendingRefusals(files.dir, refusalsPerSync);
    try {
      res = await client.daemons.syncDaemon(
        {
          users,
          privateIps: endpoints,
          metadata: machineMetadata(hostname),
          refusedCertificates: pendingReports.refusals.map((r) => ({
            ...r,
            refusedAt: timestampFromDate(r.refusedAt),
          })),
        },
        { timeoutMs: syncTimeoutMs, signal: stopping.signal },
      );
      await reportedRefusals(pendingReports.files);
    } catch (error) {
      if (isUnauthenticated(error)) return refused(error);
      log({
        level: "warn",
        msg: "SyncDaemon failed: keeping the sshd files as they are",
        error: explain(error),
      });
      scheduleSync(certificateRetryMs);
      return;
    }
    if (res.status === DaemonStatus.REJECTED) return rejected();
    const changed: string[] = [];
    // Only an accepted daemon enforces grants; the server sends none to others anyway.
    const next = new Map<string, string[]>();
    if (res.status === DaemonStatus.ACCEPTED) {
      for (const { username, ids } of res.principals) {
        if (usernamePattern.test(username) && ids.length > 0) next.set(username, [...ids]);
      }
    }
    if (await files.writePrincipals(next)) changed.push("principals");
    principals = next;
    requireRecording = res.config?.requireRecording ?? false;
    recordSessions = res.config?.recordSessions ?? false;
    if (await writeLoginPolicy(files.dir, requireRecording)) changed.push("login_policy");
    await writeLoginSettings(options.stateDir, { requireRecording, recordSessions }).catch((error) =>
      log({ level: "warn", msg: "the recording settings cannot be kept", error: explain(error) }),
    );
    // Logins kept while the server could not be reached: it can be now.
    if (spool.size > 0) void spool.drain();
    let renewIn = fullSyncEveryMs;
    if (res.status === DaemonStatus.ACCEPTED) {
      const current = await currentCertificate();
      if (forceCertificate || !current || certificateOutdated(current)) {
        const signed = await signHostCertificate(changed);
        renewIn = signed ? renewalDelay(signed) : certificateRetryMs;
      } else {
        renewIn = renewalDelay(current);
      }
      if (await updateRevocationList()) changed.push("revoked_keys");
    }
    // sshd reads the trusted keys and the principals at every login; only the host certificate
    // needs a reload. A reload is not free: sshd re-executes itself, refusing connections for a
    // moment, and a second SIGHUP during that moment can kill it.
    if (changed.includes("host_certificate")) await reload(changed);
    scheduleSync(renewIn);
    log({
      level: "info",
      msg: "synced",
      status: DaemonStatus[res.status],
      logins: Object.fromEntries([...next].map(([user, ids]) => [user, ids.length])),
      changed,
    });
    events.emit("synced", { status: res.status, principals: next, changed });
  }

  // ---- the host certificate ------------------------------------------------------------------

  async function hostKeyLine(): Promise<string | undefined> {
    const text = (await readIfPresent(hostKeyFile))?.toString("utf8");
    const line = text?.split("\n").find((l) => l.trim() !== "");
    return line === undefined ? undefined : line.trim().split(/\s+/).slice(0, 2).join(" ");
  }

  async function currentCertificate(): Promise<SshCertificate | undefined> {
    const line = await files.readHostCertificate();
    if (line === undefined) return undefined;
    try {
      return parseSshCertificate(line);
    } catch {
      return undefined;
    }
  }

  /** The hosts sshd is reached at: the certificate must name each of them. */
  const endpointHosts = endpoints.map((e) => e.replace(/^\[(.*)\](:\d+)?$/, "$1").replace(/:\d+$/, ""));

  function renewalDelay(certificate: SshCertificate): number {
    const from = certificate.validAfter.getTime();
    const renewAt = from + ((certificate.validBefore.getTime() - from) * 2) / 3;
    return Math.max(certificateRetryMs, renewAt - Date.now());
  }

  function certificateOutdated(certificate: SshCertificate): boolean {
    const now = Date.now();
    return (
      certificate.certType !== "host" ||
      certificate.validAfter.getTime() > now ||
      renewalDelay(certificate) <= certificateRetryMs ||
      !certificate.principals.includes(enrolment!.targetId) ||
      // Once signed for these addresses, a missing one is the server's decision (it waits for an
      // administrator's approval, or another target claims it), not a reason to ask again.
      (!signedThisRun && endpointHosts.some((host) => !certificate.principals.includes(host)))
    );
  }

  /** Whether a host certificate was signed for this process's addresses. */
  let signedThisRun = false;

  async function signHostCertificate(changed: string[]): Promise<SshCertificate | undefined> {
    const publicKey = await hostKeyLine();
    if (publicKey === undefined) {
      log({ level: "error", msg: "no host key to certify", hostKeyFile });
      return undefined;
    }
    try {
      const res = await client.certificates.signSSHCertificate(
        {
          type: SignSSHCertificateRequest_CertificateType.HOST,
          workspaceId: enrolment!.workspaceId,
          publicKey: `${publicKey}\n`,
        },
        { timeoutMs: syncTimeoutMs, signal: stopping.signal },
      );
      const certificate = parseSshCertificate(res.signedCertificate);
      const caKeys = res.caPublicKey.split("\n").filter((l) => l.trim() !== "");
      if (certificate.certType !== "host") throw new Error("the server signed a user certificate");
      if (!certificate.keyBlob.equals(keyBlobOf(publicKey))) {
        throw new Error("the certificate is for another key");
      }
      if (caKeys.length === 0 || !certificate.signatureKey.equals(keyBlobOf(caKeys[0]!))) {
        throw new Error("the certificate is not signed by the first key of the authority's list");
      }
      // The trusted keys first: a login with a certificate of a new CA key must never meet a
      // host certificate of that key before sshd trusts it.
      if (await files.writeTrustedUserCaKeys(res.caPublicKey)) changed.push("trusted_user_ca_keys");
      if (await files.writeHostCertificate(res.signedCertificate)) changed.push("host_certificate");
      authorityId = res.caId;
      signedThisRun = true;
      const unnamed = endpointHosts.filter((host) => !certificate.principals.includes(host));
      if (unnamed.length > 0) {
        log({
          level: "warn",
          msg: "the host certificate does not name some of this machine's addresses: an administrator approves them on the target (or another target has them)",
          addresses: unnamed,
        });
      }
      log({
        level: "info",
        msg: "host certificate signed",
        ca: res.caName || res.caId,
        principals: certificate.principals,
        validBefore: certificate.validBefore.toISOString(),
      });
      events.emit("host-certificate", {
        principals: certificate.principals,
        validBefore: certificate.validBefore,
      });
      return certificate;
    } catch (error) {
      if (isUnauthenticated(error)) {
        await refused(error);
        return undefined;
      }
      log({ level: "warn", msg: "host certificate not signed: retrying in 30 s", error: explain(error) });
      return undefined;
    }
  }

  // ---- the revocation list ------------------------------------------------------------------

  /** The authority that certifies this machine, from its last signing or its host certificate. */
  let authorityId: string | undefined;

  async function signingAuthority(): Promise<string | undefined> {
    if (authorityId !== undefined) return authorityId;
    const current = await currentCertificate();
    if (!current) return undefined;
    const { certificateAuthorities } = await client.certificates.listCertificateAuthorities(
      { workspaceId: enrolment!.workspaceId },
      { timeoutMs: syncTimeoutMs, signal: stopping.signal },
    );
    authorityId = certificateAuthorities.find((ca) => {
      try {
        return current.signatureKey.equals(keyBlobOf(ca.publicKey));
      } catch {
        return false;
      }
    })?.id;
    return authorityId;
  }

  /**
   * Replaces `revoked_keys` with the authority's KRL; true when it changed. When the server
   * cannot be asked, the file stays as it is: logins go on with the last list fetched.
   */
  async function updateRevocationList(): Promise<boolean> {
    try {
      const caId = await signingAuthority();
      if (caId === undefined) return false;
      const res = await client.certificates.getRevocationList(
        { workspaceId: enrolment!.workspaceId, caId },
        { timeoutMs: syncTimeoutMs, signal: stopping.signal },
      );
      if (res.format !== "openssh-krl")
        throw new Error(`the server sent a ${res.format || "list"}, not a KRL`);
      const changed = await files.writeRevokedKeys(res.revocationList);
      if (changed) log({ level: "info", msg: "revocation list written", entries: res.entries });
      return changed;
    } catch (error) {
      if (isUnauthenticated(error)) {
        await refused(error);
        return false;
      }
      log({ level: "warn", msg: "revocation list not fetched: keeping the last one", error: explain(error) });
      return false;
    }
  }

  // ---- reload ------------------------------------------------------------------------------

  let reloading = Promise.resolve();
  function reload(changed: readonly string[]): Promise<void> {
    const command = options.reloadCommand;
    if (!command) return Promise.resolve();
    reloading = reloading.then(
      () =>
        new Promise<void>((resolve) => {
          exec(command, { timeout: 60_000 }, (error, _stdout, stderr) => {
            if (error)
              log({
                level: "error",
                msg: "reload command failed",
                command,
                error: stderr.trim() || error.message,
              });
            else log({ level: "info", msg: "sshd reloaded", command, changed });
            events.emit("reloaded", { ok: !error });
            resolve();
          });
        }),
    );
    return reloading;
  }

  // ---- the end -----------------------------------------------------------------------------

  async function rejected(): Promise<void> {
    log({
      level: "error",
      msg: "this daemon was rejected: its logins are removed and its enrolment forgotten",
    });
    await files.writePrincipals(new Map()).catch(() => false);
    principals = new Map();
    await state.forgetEnrolment();
    await shutDown(exitCodes.rejected, "the daemon was rejected by an administrator");
  }

  async function refused(error: unknown): Promise<void> {
    log({
      level: "error",
      msg:
        "the server refused this agent's key: its daemon was deleted, or the key is not the enrolled one " +
        "(check the clock too). Its logins are removed; enrol again to continue",
      error: explain(error),
    });
    await files.writePrincipals(new Map()).catch(() => false);
    principals = new Map();
    await shutDown(exitCodes.refused, "the server refused the agent's key");
  }

  let stopped: Promise<void> | undefined;
  function shutDown(exitCode: number, reason: string): Promise<void> {
    stopped ??= (async () => {
      stopping.abort();
      clearTimeout(nextSync);
      await Promise.all([...sessions.values()].map((s) => s.end("the agent is stopping")));
      await logins.close();
      spool.close();
      client.close();
      finish({ exitCode, reason });
    })();
    return stopped;
  }

  // ---- the control stream ----------------------------------------------------------------------

  function onNotification(notification: Notification): void {
    switch (notification.eventType) {
      case Notification_EventType.PRINCIPALS:
      case Notification_EventType.REVOCATIONS:
        void requestSync(false);
        return;
      case Notification_EventType.CERTIFICATES:
      case Notification_EventType.SYNC_REQUEST:
        void requestSync(true);
        return;
      case Notification_EventType.STATUS:
        if (notification.daemonId === enrolment!.daemonId && notification.status === DaemonStatus.REJECTED) {
          void rejected();
        }
        return;
      default:
        log({ level: "debug", msg: "notification ignored", type: notification.eventType });
    }
  }

  async function runControlStream(accepted: () => void): Promise<void> {
    const stream = new AbortController();
    const stop = () => stream.abort();
    stopping.signal.addEventListener("abort", stop, { once: true });
    let first = true;
    try {
      const requests = heartbeats(options.heartbeatIntervalMs ?? heartbeatEveryMs, stream.signal);
      for await (const message of client.daemonControl.connect(requests, { signal: stream.signal })) {
        if (first) {
          first = false;
          accepted();
        }
        if (message.msg.case === "notification") onNotification(message.msg.value);
        else if (message.msg.case === "session") void startSession(message.msg.value);
        else if (message.msg.case === "terminateSession") {
          const { sessionId, reason } = message.msg.value;
          if (!logins.terminate(sessionId, reason))
            void sessions.get(sessionId)?.end(`terminated: ${reason}`);
        }
      }
    } finally {
      stopping.signal.removeEventListener("abort", stop);
      stream.abort();
    }
  }

  async function controlLoop(): Promise<void> {
    const backoff = new Backoff(options.backoff);
    while (!stopping.signal.aborted) {
      let error: unknown;
      try {
        await runControlStream(() => {
          backoff.reset();
          log({ level: "info", msg: "control stream open" });
          events.emit("control-stream", { state: "open" });
          // Whatever changed while the stream was down; notifications cover the rest.
          void requestSync(false);
        });
      } catch (cause) {
        error = cause;
      }
      if (stopping.signal.aborted) return;
      // A deleted daemon's stream ends `unauthenticated`: SyncDaemon says whether it is so.
      if (isUnauthenticated(error)) await requestSync(false);
      if (stopping.signal.aborted) return;
      const retryInMs = backoff.next();
      const reason = error === undefined ? undefined : explain(error);
      log({ level: "warn", msg: "control stream ended: reconnecting", error: reason, retryInMs });
      events.emit("control-stream", { state: "closed", retryInMs, ...(reason && { error: reason }) });
      await sleep(retryInMs, stopping.signal);
    }
  }

  // ---- sessions --------------------------------------------------------------------------------

  async function startSession(push: Session): Promise<void> {
    const { sessionId, username, userId } = push;
    // A refused session is only logged: the server times it out on its own.
    const refuse = (reason: string) => {
      log({ level: "warn", msg: "session refused", sessionId, username, reason });
      events.emit("session-refused", { sessionId, reason });
    };
    if (sessions.size >= maxSessions) return refuse(`${maxSessions} sessions are running`);
    if (!principals.get(username)?.includes(userId)) {
      return refuse(`${userId} is not granted ${username} on this machine`);
    }
    const account = await findAccount(username);
    if (!account) return refuse(`there is no local user ${username}`);
    const cannot = cannotRunAs(account);
    if (cannot) return refuse(cannot);
    const session = runSession(push, account, client, {
      started: () => {
        log({ level: "info", msg: "session started", sessionId, username, uid: account.uid });
        events.emit("session-started", { sessionId, username });
      },
      resized: (cols, rows) => events.emit("session-resized", { sessionId, cols, rows }),
      ended: (reason) => {
        log({ level: "info", msg: "session ended", sessionId, reason });
        events.emit("session-ended", { sessionId, reason });
      },
    });
    sessions.set(sessionId, session);
    await session.ended;
    sessions.delete(sessionId);
  }

  // ---- start -----------------------------------------------------------------------------------

  log({
    level: "info",
    msg: "agent starting",
    daemonId: enrolment.daemonId,
    server: enrolment.server,
    sshdDir: files.dir,
    endpoints,
  });
  void requestSync(false);
  void controlLoop();

  return {
    enrolment,
    events,
    files,
    principals: () => principals,
    sessions: () => [...sessions.keys()],
    sshLogins: () => logins.live(),
    stop: () => shutDown(exitCodes.stopped, "stopped"),
    done,
  };
}

/** Heartbeat{} every `intervalMs`, the first one after one interval, until `signal` aborts. */
async function* heartbeats(intervalMs: number, signal: AbortSignal): AsyncGenerator<ConnectRequest> {
  for (;;) {
    await sleep(intervalMs, signal);
    if (signal.aborted) return;
    yield create(ConnectRequestSchema, { msg: { case: "heartbeat", value: {} } });
  }
}
