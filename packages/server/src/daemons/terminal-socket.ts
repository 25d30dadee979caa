/**
 * Helpers for one terminal WebSocket, whichever side it is on: closing it with the `closed`
 * frame, keeping it alive through proxies, and holding what it sends before it is attached.
 *
 * @module
 */
import type { RawData, WebSocket } from "ws";
import type { CarriedInput } from "./session-relay.js";
import {
  closedFrame,
  closeReasonText,
  errorFrame,
  parseControlMessage,
  type TerminalSize,
} from "./terminal-frames.js";

/** How often an idle terminal socket is PINGed; one that misses a PONG for as long is cut. */
export const keepaliveIntervalMs = 30_000;
/** Input held while a socket waits for its session to open; beyond it the socket is closed. */
export const carriedInputLimitBytes = 256 * 1024;

/** Sends the `closed` frame, then closes the socket (a socket not open is just dropped). */
export function closeSocket(socket: WebSocket, reason: string, code: number): void {
  if (socket.readyState !== socket.OPEN) {
    socket.terminate();
    return;
  }
  // A socket paused for flow control must read again to hear the other end's close.
  if (socket.isPaused) socket.resume();
  socket.send(closedFrame(reason));
  socket.close(code, closeReasonText(reason));
}

/** The bytes of a received frame (`ws` hands over a Buffer, or a list of them when fragmented). */
export function asBytes(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}

/**
 * PINGs the socket so that proxies and NATs keep it open through a quiet session (idle periods
 * of 30 minutes are normal), and cuts it when the other end stopped answering.
 */
export function keepAlive(socket: WebSocket, intervalMs = keepaliveIntervalMs): void {
  let answered = true;
  socket.on("pong", () => {
    answered = true;
  });
  const timer = setInterval(() => {
    if (!answered) {
      socket.terminate();
      return;
    }
    answered = false;
    socket.ping();
  }, intervalMs);
  timer.unref();
  socket.once("close", () => clearInterval(timer));
}

/** What a socket sends while it waits: the last size asked for and the input, bounded. */
export interface InputCarrier {
  /** The last size the socket asked for, if any. */
  size(): TerminalSize | undefined;
  /** Stops listening and hands over what was held. */
  take(): CarriedInput;
}

export function carryInput(socket: WebSocket, onOverflow: () => void): InputCarrier {
  let size: TerminalSize | undefined;
  const input: Uint8Array[] = [];
  let bytes = 0;
  const onMessage = (data: RawData, isBinary: boolean) => {
    const frame = asBytes(data);
    if (!isBinary) {
      const message = parseControlMessage(frame.toString());
      if (message.kind === "resize") size = message.size;
      else if (message.kind === "invalid") socket.send(errorFrame(message.message));
      return;
    }
    bytes += frame.length;
    if (bytes > carriedInputLimitBytes) {
      socket.off("message", onMessage);
      onOverflow();
      return;
    }
    input.push(frame);
  };
  socket.on("message", onMessage);
  return {
    size: () => size,
    take() {
      socket.off("message", onMessage);
      return { size, input: input.splice(0) };
    },
  };
}
