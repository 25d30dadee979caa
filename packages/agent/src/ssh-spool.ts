/**
 * SSH logins the agent keeps on disk while the server cannot be reached (the daemon lets such
 * logins in: no `requireRecording`), so that the platform learns of each of them once it can be
 * reached again (docs/agent.md, "Logins while the server cannot be reached").
 *
 * Each such login is a folder `<state dir>/ssh-spool/<offline id>/` (0700; files 0600):
 * `login.json` (who, as whom, what, from where, when it began, whether it is recorded),
 * `recording.cast` (its asciicast v2 recording as the agent writes it, when the daemon records
 * sessions) and `end.json` once it ended. After the control stream opens again, the agent
 * registers it (BeginSSHSession with the offline id and the start: answered with the same
 * session however often it is sent), reports its end (EndSSHSession with its end time), uploads
 * the recording by offset (AppendSSHRecording: nothing is lost or repeated when an answer is)
 * and deletes the folder. A login still running then goes on as a registered one: listed,
 * terminable, its recording uploaded as it grows. The folders outlive the agent: one found at
 * start without `end.json` ended while the agent was away, and says so.
 *
 * The folders' files never hold more than {@link SshSpoolOptions.maxBytes} bytes together
 * ({@link SpoolBudget}). A login is kept only if its facts and a reserve for its end fit; a
 * recording that would not fit stops, and the reserve holds a last marker saying so (the gap
 * is in the recording and in the login's end reason, not silent). A login that cannot be kept
 * at all runs unregistered, as the daemon allows, and the agent's log says so.
 *
 * @module
 */
import { randomUUID } from "node:crypto";
import { closeSync, fsyncSync, openSync, statSync, writeSync } from "node:fs";
import { mkdir, open, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { SessionKind } from "@wap/api";
import type { DaemonClient } from "@wap/client";
import { explain, isRefusal } from "./errors.js";
import type { Logger } from "./log.js";

export const spoolLimits = {
  /** The default bound of the spool's files, in bytes. */
  defaultMaxBytes: 64 * 1024 * 1024,
  /** Kept for each login's end: `end.json` and the marker of a recording that stopped. */
  reserveBytes: 4096,
  /** The most one append carries (the server's limit). */
  appendBytes: 64 * 1024,
  /** Between uploads of a live login's recording once registered. */
  tailMs: 250,
  /** Between attempts while the server cannot be reached (the next sync also tries). */
  retryMs: 10_000,
  requestTimeoutMs: 5_000,
} as const;

/**
 * The bytes the spool's files may take: a take that would go past `max` is refused, so the
 * total never exceeds it.
 */
export class SpoolBudget {
  #used: number;

  constructor(
    readonly max: number,
    used = 0,
  ) {
    this.#used = used;
  }

  get used(): number {
    return this.#used;
  }

  /** Takes `bytes` if they fit: whether they did. */
  take(bytes: number): boolean {
    if (!Number.isSafeInteger(bytes) || bytes < 0 || this.#used + bytes > this.max) return false;
    this.#used += bytes;
    return true;
  }

  /** Counts bytes already on disk (found at start), even past `max`: later takes then fail. */
  count(bytes: number): void {
    this.#used += bytes;
  }

  /** Gives back what a deleted login took. */
  release(bytes: number): void {
    this.#used = Math.max(0, this.#used - bytes);
  }
}

/** What the agent knows of a login it keeps (from /proc and the certificate file sshd wrote). */
export interface SpooledFacts {
  readonly certificate: string;
  readonly username: string;
  readonly kind: "shell" | "exec" | "subsystem";
  readonly command: string;
  readonly tty: boolean;
  readonly clientAddress: string;
}

interface LoginFile {
  readonly offlineId: string;
  readonly facts: SpooledFacts;
  readonly startedAt: string;
  readonly recorded: boolean;
}

export interface SpooledEnd {
  readonly endedAt: string;
  readonly exitStatus: number;
  readonly bytesIn: number;
  readonly bytesOut: number;
  readonly reason: string;
}

const kindToWire = { shell: SessionKind.SHELL, exec: SessionKind.EXEC, subsystem: SessionKind.SUBSYSTEM };
const fileMode = 0o600;

/** One login on disk. */
export class SpooledLogin {
  /** The server's id once registered. */
  sessionId: string | undefined;
  end: SpooledEnd | undefined;
  /** Whether the recording stopped because the spool was full. */
  gap = false;
  #endReported = false;
  /** Bytes of the recording the server holds. */
  #uploaded = 0;
  #recordingDone = false;
  #reserveUsed = false;

  constructor(
    readonly dir: string,
    readonly login: LoginFile,
    /** Bytes taken from the budget for this login. */
    public charged: number,
    readonly budget: SpoolBudget,
  ) {}

  get recordingFile(): string {
    return join(this.dir, "recording.cast");
  }

  /** Appends to the recording if the budget allows: whether it did. */
  appendRecording(bytes: Buffer): boolean {
    if (!this.budget.take(bytes.byteLength)) return false;
    this.charged += bytes.byteLength;
    appendSync(this.recordingFile, bytes);
    return true;
  }

  /** Appends the one marker of a stopped recording from the login's reserve. */
  appendFromReserve(bytes: Buffer): void {
    if (this.#reserveUsed || bytes.byteLength > spoolLimits.reserveBytes / 2) return;
    this.#reserveUsed = true;
    appendSync(this.recordingFile, bytes);
  }

  /** Writes how the login ended (from the reserve: its size is bounded). */
  writeEnd(end: SpooledEnd): void {
    let text = JSON.stringify(end);
    if (Buffer.byteLength(text) > spoolLimits.reserveBytes / 2) {
      text = JSON.stringify({ ...end, reason: end.reason.slice(0, 200) });
    }
    const fd = openSync(join(this.dir, "end.json"), "w", fileMode);
    try {
      writeSync(fd, text);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    this.end = end;
  }

  /**
   * Brings the server up to date with this login: registers it, reports its end, uploads the
   * recording from where the server's copy ends. Returns whether the login is done with (its
   * folder may go). Throws when the server cannot be reached.
   */
  async upload(client: DaemonClient, onRegistered: (login: SpooledLogin) => void): Promise<boolean> {
    const { login } = this;
    if (this.sessionId === undefined) {
      const res = await client.daemons.beginSSHSession(
        {
          certificate: login.facts.certificate,
          username: login.facts.username,
          clientAddress: login.facts.clientAddress,
          kind: kindToWire[login.facts.kind],
          command: login.facts.command,
          tty: login.facts.tty,
          offlineId: login.offlineId,
          startedAt: timestampFromDate(new Date(login.startedAt)),
          recorded: login.recorded,
        },
        { timeoutMs: spoolLimits.requestTimeoutMs },
      );
      this.sessionId = res.sessionId;
      onRegistered(this);
    }
    const end = this.end;
    if (end && !this.#endReported) {
      await client.daemons.endSSHSession(
        {
          sessionId: this.sessionId,
          exitStatus: end.exitStatus,
          bytesIn: BigInt(end.bytesIn),
          bytesOut: BigInt(end.bytesOut),
          reason: end.reason.slice(0, 512),
          endedAt: timestampFromDate(new Date(end.endedAt)),
        },
        { timeoutMs: spoolLimits.requestTimeoutMs },
      );
      this.#endReported = true;
    }
    if (login.recorded && !this.#recordingDone) await this.#uploadRecording(client, end !== undefined);
    return end !== undefined && (this.#recordingDone || !login.recorded);
  }

  async #uploadRecording(client: DaemonClient, ended: boolean): Promise<void> {
    const file = await open(this.recordingFile, "r").catch(() => undefined);
    if (!file) {
      this.#recordingDone = ended;
      return;
    }
    try {
      const size = (await file.stat()).size;
      for (;;) {
        const length = Math.min(spoolLimits.appendBytes, size - this.#uploaded);
        const data = Buffer.alloc(Math.max(0, length));
        if (length > 0) await file.read(data, 0, length, this.#uploaded);
        const final = ended && this.#uploaded + length >= size;
        if (length <= 0 && !final) return;
        try {
          const res = await client.daemons.appendSSHRecording(
            { sessionId: this.sessionId!, offset: BigInt(this.#uploaded), data, final },
            { timeoutMs: spoolLimits.requestTimeoutMs },
          );
          this.#uploaded = Number(res.size);
          if (res.truncated || final) {
            this.#recordingDone = ended || res.truncated;
            if (res.truncated && !final) continue;
            return;
          }
        } catch (error) {
          // The server will not take it (its size limit was passed already, the login is not
          // recorded there): nothing more to send.
          if (!isRefusal(error)) throw error;
          this.#recordingDone = true;
          return;
        }
      }
    } finally {
      await file.close();
    }
  }
}

function appendSync(path: string, bytes: Buffer): void {
  const fd = openSync(path, "a", fileMode);
  try {
    writeSync(fd, bytes);
  } finally {
    closeSync(fd);
  }
}

export interface SshSpoolOptions {
  /** `<state dir>/ssh-spool`. */
  readonly dir: string;
  /** The most the spool's files hold together, in bytes. */
  readonly maxBytes: number;
  readonly client: DaemonClient;
  readonly log: Logger;
  /** A login kept offline was registered: it now has the server's session id. */
  readonly onRegistered: (login: SpooledLogin) => void;
}

export class SshSpool {
  readonly #options: SshSpoolOptions;
  readonly budget: SpoolBudget;
  readonly #logins = new Map<string, SpooledLogin>();
  #draining: Promise<void> | undefined;
  #again = false;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  private constructor(options: SshSpoolOptions) {
    this.#options = options;
    this.budget = new SpoolBudget(options.maxBytes);
  }

  /**
   * Opens the spool, with what an earlier run of the agent left in it. A login without an end
   * ended while no agent followed it: it gets an end saying so.
   */
  static async open(options: SshSpoolOptions): Promise<SshSpool> {
    const spool = new SshSpool(options);
    await mkdir(options.dir, { recursive: true, mode: 0o700 });
    for (const name of await readdir(options.dir)) {
      const dir = join(options.dir, name);
      try {
        const login = JSON.parse(await readFile(join(dir, "login.json"), "utf8")) as LoginFile;
        let charged = 0;
        for (const file of await readdir(dir)) charged += (await stat(join(dir, file))).size;
        const end = await readFile(join(dir, "end.json"), "utf8").then(
          (text) => JSON.parse(text) as SpooledEnd,
          () => undefined,
        );
        if (!end) charged += spoolLimits.reserveBytes;
        spool.budget.count(charged);
        const spooled = new SpooledLogin(dir, login, charged, spool.budget);
        if (end) spooled.end = end;
        else {
          const last = statSync(login.recorded ? spooled.recordingFile : join(dir, "login.json"), {
            throwIfNoEntry: false,
          });
          if (login.recorded) {
            spooled.appendFromReserve(
              markerLine(login, last?.mtimeMs, "the agent stopped: the rest of the login was not recorded"),
            );
          }
          spooled.writeEnd({
            endedAt: new Date(last?.mtimeMs ?? Date.now()).toISOString(),
            exitStatus: -1,
            bytesIn: 0,
            bytesOut: 0,
            reason: "the agent stopped during the login: how it ended is not known",
          });
        }
        spool.#logins.set(login.offlineId, spooled);
      } catch (error) {
        options.log({ level: "error", msg: "ssh spool: a login cannot be read", dir, error: explain(error) });
      }
    }
    return spool;
  }

  /** The logins on disk. */
  get size(): number {
    return this.#logins.size;
  }

  /**
   * Keeps a login that began while the server could not be reached; undefined when the spool
   * has no room for it.
   */
  async begin(facts: SpooledFacts, recorded: boolean): Promise<SpooledLogin | undefined> {
    const offlineId = randomUUID();
    const login: LoginFile = { offlineId, facts, startedAt: new Date().toISOString(), recorded };
    const text = JSON.stringify(login);
    const charge = Buffer.byteLength(text) + spoolLimits.reserveBytes;
    if (!this.budget.take(charge)) return undefined;
    const dir = join(this.#options.dir, offlineId);
    try {
      await mkdir(dir, { mode: 0o700 });
      await writeFile(join(dir, "login.json"), text, { mode: fileMode, flush: true });
    } catch (error) {
      this.budget.release(charge);
      throw error;
    }
    const spooled = new SpooledLogin(dir, login, charge, this.budget);
    this.#logins.set(offlineId, spooled);
    return spooled;
  }

  /** Tries to bring the server up to date now (after a sync, a login's end); one drain at a time. */
  drain(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    if (this.#draining) {
      this.#again = true;
      return this.#draining;
    }
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#draining = (async () => {
      let failed = false;
      do {
        this.#again = false;
        failed = await this.#drainOnce();
      } while (this.#again && !failed && !this.#closed);
      this.#draining = undefined;
      if (this.#closed || this.#logins.size === 0) return;
      const live = [...this.#logins.values()].some((l) => l.sessionId !== undefined && !l.end);
      this.#timer = setTimeout(
        () => void this.drain(),
        failed ? spoolLimits.retryMs : live ? spoolLimits.tailMs : spoolLimits.retryMs,
      );
      this.#timer.unref();
    })();
    return this.#draining;
  }

  /** Whether one pass failed to reach the server. */
  async #drainOnce(): Promise<boolean> {
    const { client, log, onRegistered } = this.#options;
    for (const spooled of [...this.#logins.values()]) {
      try {
        if (!(await spooled.upload(client, onRegistered))) continue;
        log({
          level: "info",
          msg: "ssh login held offline: registered and uploaded",
          sessionId: spooled.sessionId,
          offlineId: spooled.login.offlineId,
        });
      } catch (error) {
        if (!isRefusal(error)) {
          log({ level: "warn", msg: "ssh spool: the server cannot be reached", error: explain(error) });
          return true;
        }
        // The server will never take it (a certificate it did not issue, a daemon no longer
        // accepted): what the agent knew is in its log, the folder goes.
        log({
          level: "error",
          msg: "ssh login held offline refused by the server",
          offlineId: spooled.login.offlineId,
          username: spooled.login.facts.username,
          startedAt: spooled.login.startedAt,
          error: explain(error),
        });
      }
      await rm(spooled.dir, { recursive: true, force: true });
      this.budget.release(spooled.charged);
      this.#logins.delete(spooled.login.offlineId);
    }
    return false;
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
  }
}

/** An asciicast marker line at the time `atMs` (or now) since the login's start. */
function markerLine(login: Pick<LoginFile, "startedAt">, atMs: number | undefined, text: string): Buffer {
  const seconds = Math.max(0, Math.round((atMs ?? Date.now()) - Date.parse(login.startedAt)) / 1000);
  return Buffer.from(`${JSON.stringify([seconds, "m", text])}\n`);
}

/** The daemon's recording settings as last synced (`<state dir>/login-settings.json`). */
export interface LoginSettings {
  readonly requireRecording: boolean;
  readonly recordSessions: boolean;
}

const settingsFile = (stateDir: string) => join(stateDir, "login-settings.json");

export async function readLoginSettings(stateDir: string): Promise<LoginSettings> {
  const text = await readFile(settingsFile(stateDir), "utf8").catch(() => "{}");
  try {
    const read = JSON.parse(text) as Partial<LoginSettings>;
    return { requireRecording: read.requireRecording === true, recordSessions: read.recordSessions === true };
  } catch {
    return { requireRecording: false, recordSessions: false };
  }
}

export async function writeLoginSettings(stateDir: string, settings: LoginSettings): Promise<void> {
  const text = JSON.stringify(settings);
  if ((await readFile(settingsFile(stateDir), "utf8").catch(() => "")) === text) return;
  await writeFile(settingsFile(stateDir), text, { mode: fileMode });
}
