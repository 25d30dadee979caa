/**
 * The socket of a read-only watch of a live SSH login (docs/sessions.md, "Watching an SSH
 * login"): what the agent recorded so far, then each new append, read from storage every
 * {@link watchPollMs} (so a watch works on any instance, whichever received the appends). The
 * asciicast lines become frames: output as binary frames, resizes and markers as JSON text
 * frames, and `closed` with how the login ended (and by whom). Nothing the watcher sends is
 * passed on.
 *
 * @module
 */
import type { Services } from "@wap/core/internal";
import { sshWatchEndOf } from "@wap/core/internal";
import type { SshSessionRecord } from "@wap/core/storage";
import type { WebSocket } from "ws";
import { closeCodes, resizeFrame, terminalSizeBounds } from "./terminal-frames.js";
import { closeSocket } from "./terminal-socket.js";

/** Between reads of the recording: with the agent's upload interval, the lag stays under 1 s. */
const watchPollMs = 200;
/** How long after the login ended the watch waits for the recording's last appends. */
const finalAppendWaitMs = 3_000;
/** Chunks read at a time. */
const chunkPage = 64;
/** A watcher that does not keep up (more unsent than this) is cut rather than buffered. */
const maxBufferedBytes = 4 * 1024 * 1024;

/** Turns the asciicast bytes of a recording, as they arrive, into watch frames. */
export class CastReader {
  #rest = Buffer.alloc(0);
  #header = true;

  constructor(private readonly send: (frame: string | Buffer) => void) {}

  push(bytes: Uint8Array): void {
    let data = Buffer.concat([this.#rest, bytes]);
    for (let nl = data.indexOf(10); nl >= 0; nl = data.indexOf(10)) {
      this.#line(data.subarray(0, nl).toString("utf8"));
      data = data.subarray(nl + 1);
    }
    this.#rest = Buffer.from(data);
  }

  #line(line: string): void {
    if (line.trim() === "") return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      return;
    }
    if (this.#header) {
      this.#header = false;
      const header = value as { width?: unknown; height?: unknown };
      if (isDimension(header.width) && isDimension(header.height)) {
        this.send(resizeFrame({ width: header.width, height: header.height }));
      }
      return;
    }
    if (!Array.isArray(value) || typeof value[2] !== "string") return;
    const [, code, text] = value as [unknown, unknown, string];
    if (code === "o") this.send(Buffer.from(text, "utf8"));
    else if (code === "r") {
      const [cols, rows] = text.split("x").map(Number);
      if (isDimension(cols) && isDimension(rows)) this.send(resizeFrame({ width: cols, height: rows }));
    } else if (code === "m") this.send(JSON.stringify({ type: "marker", text }));
  }
}

/** A size the browser's terminal takes (the terminal socket's bounds); others are not passed on. */
const isDimension = (n: unknown): n is number =>
  Number.isInteger(n) && (n as number) >= terminalSizeBounds.min && (n as number) <= terminalSizeBounds.max;

/** Follows `login` on `ws` until it ends (or the socket closes). */
export async function followLogin(ws: WebSocket, services: Services, login: SshSessionRecord): Promise<void> {
  const { workspaceId, id } = login;
  const reader = new CastReader((frame) => {
    if (ws.readyState === ws.OPEN) ws.send(frame);
  });
  // Input is not accepted: frames from the watcher are read and dropped.
  ws.on("message", () => {});
  let afterSeq: number | undefined;
  let endedAt: number | undefined;
  let wake = () => {};
  ws.once("close", () => wake());
  while (ws.readyState === ws.OPEN) {
    if (ws.bufferedAmount > maxBufferedBytes) {
      closeSocket(ws, "the watch fell too far behind the login", closeCodes.normal);
      return;
    }
    for (;;) {
      const chunks = await services.storage.recordings.scanChunks(workspaceId, id, {
        ...(afterSeq !== undefined && { afterSeq }),
        limit: chunkPage,
      });
      for (const chunk of chunks) reader.push(chunk.data);
      if (chunks.length > 0) afterSeq = chunks[chunks.length - 1]!.seq;
      if (chunks.length < chunkPage) break;
    }
    const now = await services.storage.sshSessions.findById(workspaceId, id);
    if (now === null) {
      closeSocket(ws, "the login is no longer known", closeCodes.normal);
      return;
    }
    if (now.endedAt !== null) {
      endedAt ??= Date.now();
      const recording = await services.storage.recordings.findById(workspaceId, id);
      if (recording?.complete || Date.now() - endedAt >= finalAppendWaitMs) {
        if (recording?.complete) {
          // Appends that completed it after this round's read.
          const last = await services.storage.recordings.scanChunks(workspaceId, id, {
            ...(afterSeq !== undefined && { afterSeq }),
            limit: 1_000_000,
          });
          for (const chunk of last) reader.push(chunk.data);
        }
        closeSocket(ws, await sshWatchEndOf(services, now), closeCodes.normal);
        return;
      }
    }
    await new Promise<void>((resolve) => {
      wake = resolve;
      setTimeout(resolve, watchPollMs).unref();
    });
    wake = () => {};
  }
}
