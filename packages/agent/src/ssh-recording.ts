/**
 * The recording of one SSH login, written by the agent as an asciicast v2 file and uploaded with
 * AppendSSHRecording by offset (so a lost answer or a reconnect neither loses nor repeats bytes).
 *
 * - The header names the terminal size, the start, and what ran (`title`: the command line, or
 *   the subsystem); output events (`o`) carry what the login wrote to the client, timed by the
 *   agent as it received them from the wrapper; `r` events the terminal's resizes; a last marker
 *   (`m`) its exit status.
 * - Commands without a terminal (exec) record at most {@link recordingLimits.execOutputBytes} of
 *   output, then a marker says the rest was left out; a subsystem (sftp) records no bytes of its
 *   binary protocol: a marker per file the wrapper saw it read or write (sftp-markers.ts), then
 *   one with the totals.
 * - What waits for the server is held in memory, at most {@link recordingLimits.pendingBytes}. When
 *   the server cannot take it for {@link recordingLimits.failClosedMs} (or more is waiting), a
 *   daemon that requires recording ends the login (`onCannotStore`); otherwise the recording stops
 *   and the login goes on.
 *
 * @module
 */
import type { DaemonClient } from "@wap/client";
import { explain, isRefusal } from "./errors.js";
import type { Logger } from "./log.js";
import { SftpMarkers } from "./sftp-markers.js";
import type { SpooledLogin } from "./ssh-spool.js";

export const recordingLimits = {
  /** Output recorded of a command run without a terminal. */
  execOutputBytes: 1024 * 1024,
  /** The most one append carries (the server's limit). */
  appendBytes: 64 * 1024,
  /** Recording bytes held for the server; more stops the recording (or ends the login). */
  pendingBytes: 8 * 1024 * 1024,
  /** How long a daemon that requires recording waits for the server before ending the login. */
  failClosedMs: 5_000,
  /** Between uploads while output flows. */
  flushMs: 200,
  retryMs: 1_000,
} as const;

export interface LoginRecordingOptions {
  readonly sessionId: string;
  readonly client: DaemonClient;
  readonly log: Logger;
  readonly kind: "shell" | "exec" | "subsystem";
  readonly command: string;
  readonly tty: boolean;
  readonly size: { readonly cols: number; readonly rows: number };
  readonly requireRecording: boolean;
  /** The recording cannot be stored and the daemon requires it: the login must end. */
  readonly onCannotStore: (reason: string) => void;
  /** A login kept offline: the recording goes to its folder in the spool, not to the server. */
  readonly spool?: SpooledLogin;
}

const validDimension = (n: unknown): n is number =>
  Number.isInteger(n) && (n as number) >= 1 && (n as number) <= 10_000;

export class LoginRecording {
  readonly #options: LoginRecordingOptions;
  readonly #startedAt = Date.now();
  readonly #decoder = new TextDecoder("utf-8");
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  /** Bytes the server has stored. */
  #stored = 0;
  #outputBytes = 0;
  #stopped = false;
  /** Something of the recording is in the spool (its header at least). */
  #spooled = false;
  #finishing = false;
  #uploading: Promise<void> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #failingSince: number | undefined;
  #lastTime = 0;
  readonly #sftp = new SftpMarkers();

  constructor(options: LoginRecordingOptions) {
    this.#options = options;
    const { cols, rows } = options.size;
    const header = {
      version: 2,
      width: validDimension(cols) ? cols : 80,
      height: validDimension(rows) ? rows : 24,
      timestamp: Math.floor(this.#startedAt / 1000),
      title: options.kind === "shell" ? "ssh" : `ssh ${options.kind}: ${options.command}`,
    };
    this.#push(`${JSON.stringify(header)}\n`);
    if (options.kind === "subsystem") {
      this.#event("m", `${options.command}: the protocol's bytes are not recorded, the files it moved are`);
    }
  }

  /** A file an sftp login read or wrote (`f`), or the end of its listing (`sftp-end`), as markers. */
  sftpReport(report: Record<string, unknown>): void {
    if (this.#stopped || this.#finishing || this.#options.kind !== "subsystem") return;
    for (const marker of this.#sftp.report(report)) this.#event("m", marker);
  }

  output(data: Uint8Array): void {
    if (this.#stopped || this.#finishing || this.#options.kind === "subsystem") return;
    if (!this.#options.tty) {
      const left = recordingLimits.execOutputBytes - this.#outputBytes;
      if (left <= 0) return;
      if (data.byteLength > left) {
        this.#outputBytes += data.byteLength;
        this.#text(data.subarray(0, left));
        this.#event("m", `output after ${recordingLimits.execOutputBytes} bytes is not recorded`);
        return;
      }
    }
    this.#outputBytes += data.byteLength;
    this.#text(data);
  }

  resize(cols: unknown, rows: unknown): void {
    if (this.#stopped || this.#finishing || !validDimension(cols) || !validDimension(rows)) return;
    this.#event("r", `${cols}x${rows}`);
  }

  /** Writes the exit status, uploads the rest and completes the recording. */
  async finish(exitStatus: number): Promise<void> {
    if (this.#finishing) return;
    const rest = this.#decoder.decode();
    if (rest !== "" && !this.#stopped) this.#event("o", rest);
    if (!this.#stopped) this.#event("m", exitStatus < 0 ? "ended by a signal" : `exit status ${exitStatus}`);
    this.#finishing = true;
    clearTimeout(this.#timer);
    if (this.#options.spool) return;
    for (let attempt = 0; attempt < 5 && !this.#stopped; attempt++) {
      await this.#upload(true);
      if (this.#pendingBytes === 0 && this.#failingSince === undefined) return;
      await new Promise((resolve) => setTimeout(resolve, recordingLimits.retryMs));
    }
  }

  #text(data: Uint8Array): void {
    // A character split across two outputs is decoded whole with the second.
    const text = this.#decoder.decode(data, { stream: true });
    if (text !== "") this.#event("o", text);
  }

  #event(type: "o" | "r" | "m", data: string): void {
    this.#push(this.#line(type, data));
  }

  #line(type: "o" | "r" | "m", data: string): string {
    const elapsed = Math.round(Date.now() - this.#startedAt) / 1000;
    this.#lastTime = Math.max(this.#lastTime, elapsed);
    return `${JSON.stringify([this.#lastTime, type, data])}\n`;
  }

  #push(line: string): void {
    const bytes = Buffer.from(line, "utf8");
    const spool = this.#options.spool;
    if (spool) {
      if (this.#stopped) return;
      if (spool.appendRecording(bytes)) {
        this.#spooled = true;
        return;
      }
      // The spool is full: the recording stops here, and says so with the login's reserve
      // (unless not even its header fitted: then there is no recording to mark).
      this.#stopped = true;
      spool.gap = true;
      if (!this.#spooled) return;
      const full = `recording stopped: the agent's spool is full (${spool.budget.max} bytes); the rest of the login was not recorded`;
      spool.appendFromReserve(Buffer.from(this.#line("m", full), "utf8"));
      this.#options.log({
        level: "warn",
        msg: "ssh login recording stopped: the spool is full",
        sessionId: this.#options.sessionId,
      });
      return;
    }
    if (this.#pendingBytes + bytes.byteLength > recordingLimits.pendingBytes) {
      this.#cannotStore(`more than ${recordingLimits.pendingBytes} bytes of recording wait for the server`);
      return;
    }
    this.#pending.push(bytes);
    this.#pendingBytes += bytes.byteLength;
    if (!this.#finishing) this.#timer ??= setTimeout(() => void this.#upload(false), recordingLimits.flushMs);
  }

  #cannotStore(reason: string): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#pending = [];
    this.#pendingBytes = 0;
    this.#options.log({
      level: "warn",
      msg: "ssh login recording stopped",
      sessionId: this.#options.sessionId,
      reason,
    });
    if (this.#options.requireRecording)
      this.#options.onCannotStore(`the recording cannot be stored: ${reason}`);
  }

  async #upload(final: boolean): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#uploading) await this.#uploading;
    this.#uploading = this.#send(final);
    await this.#uploading;
    this.#uploading = undefined;
    if (this.#pendingBytes > 0 && !this.#finishing && !this.#stopped) {
      this.#timer = setTimeout(() => void this.#upload(false), recordingLimits.flushMs);
    }
  }

  /** Drops the first `bytes` of what waits: the server has them. */
  #dropSent(bytes: number): void {
    const rest = Buffer.concat(this.#pending).subarray(bytes);
    this.#pending = rest.byteLength > 0 ? [rest] : [];
    this.#pendingBytes = rest.byteLength;
  }

  async #send(final: boolean): Promise<void> {
    const { client, sessionId } = this.#options;
    try {
      do {
        const all = Buffer.concat(this.#pending);
        const data = all.subarray(0, recordingLimits.appendBytes);
        const last = final && data.byteLength === all.byteLength;
        const res = await client.daemons.appendSSHRecording(
          { sessionId, offset: BigInt(this.#stored), data, final: last },
          { timeoutMs: recordingLimits.failClosedMs },
        );
        const acknowledged = Number(res.size) - this.#stored;
        this.#stored = Number(res.size);
        // What was pushed while the append was in flight (the exit marker, more output) stays.
        this.#dropSent(Math.min(all.byteLength, Math.max(data.byteLength, acknowledged)));
        this.#failingSince = undefined;
        if (res.truncated) {
          this.#cannotStore("the recording reached its size limit");
          return;
        }
        if (last) return;
      } while (this.#pendingBytes > 0 || final);
    } catch (error) {
      if (isRefusal(error)) {
        this.#cannotStore(explain(error));
        return;
      }
      this.#failingSince ??= Date.now();
      if (Date.now() - this.#failingSince >= recordingLimits.failClosedMs) {
        if (this.#options.requireRecording)
          this.#cannotStore(`the server cannot be reached: ${explain(error)}`);
      }
    }
  }
}
