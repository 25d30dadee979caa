/**
 * Forwards a browser's terminal socket to the instance relaying its session (the instance that
 * holds the daemon's session stream), as Teleport's proxy peering forwards to the proxy holding
 * an agent's tunnel: a WebSocket to that instance's `/internal/session-relay/{session_id}`,
 * authenticated by a sealed, single-use, 30-second token in a header (relay-token.ts), then
 * frames piped both ways unchanged, with flow control: a side that has too much unsent stops
 * the other from being read.
 *
 * When the relaying instance cannot be reached, the session ends (the browser could not use
 * it) and the browser hears why.
 *
 * @module
 */
import { endSession } from "@wap/core/internal";
import type { DaemonSessionRecord, SessionRelayRecord } from "@wap/core/storage";
import { type RawData, WebSocket } from "ws";
import type { SessionRelayHub } from "./relay-hub.js";
import { mintRelayToken, relayTokenHeader } from "./relay-token.js";
import { peerHighWaterBytes } from "./session-relay.js";
import { closeCodes, resizeFrame, terminalSubprotocol } from "./terminal-frames.js";
import { asBytes, closeSocket, type InputCarrier, keepAlive } from "./terminal-socket.js";

const lowWaterBytes = 256 * 1024;
/** The relaying instance relays the daemon's chunks as they come (up to the RPC body limit). */
const maxRelayedFrameBytes = 64 * 1024 * 1024;
const connectTimeoutMs = 10_000;

export const unreachableReason = "the server relaying the session could not be reached";
export const relayLostReason = "the connection to the server relaying the session was lost";

/** The internal relay endpoint of an instance, as a WebSocket URL. */
export function relayEndpoint(baseUrl: string, sessionId: string): string {
  const url = new URL(baseUrl);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  url.pathname = `${url.pathname.replace(/\/+$/, "")}/internal/session-relay/${sessionId}`;
  return url.toString();
}

/** Pipes `browser` to the session's relay until either side closes. */
export async function forwardTerminal(
  browser: WebSocket,
  carrier: InputCarrier,
  session: DaemonSessionRecord,
  relay: SessionRelayRecord,
  hub: SessionRelayHub,
): Promise<void> {
  const { services, logger } = hub;
  const token = await mintRelayToken(
    services.keyStore,
    { sessionId: session.id, instanceId: relay.instanceId },
    services.clock.now(),
  );
  const upstream = new WebSocket(relayEndpoint(relay.url, session.id), [terminalSubprotocol], {
    headers: { [relayTokenHeader]: token },
    perMessageDeflate: false,
    maxPayload: maxRelayedFrameBytes,
    handshakeTimeout: connectTimeoutMs,
  });
  let opened = false;
  let sawClosed = false;
  // Before the handshake ends: the relay's first frames may come in the same packet as its 101.
  pipe(upstream, browser, (text) => {
    if (text.includes('"closed"')) sawClosed ||= isClosedFrame(text);
  });

  let failed = false;
  const fail = async (cause: string) => {
    if (failed) return;
    failed = true;
    logger.warn("terminal forward failed; session closed", {
      sessionId: session.id,
      relayInstance: relay.instanceId,
      error: cause,
    });
    closeSocket(browser, unreachableReason, closeCodes.unreachable);
    await endSession(services, session.workspaceId, session.id, unreachableReason).catch(() => undefined);
  };

  await new Promise<void>((resolve) => {
    upstream.once("unexpected-response", (request, response) => {
      request.destroy();
      void fail(`the relaying instance answered HTTP ${response.statusCode}`).finally(resolve);
    });
    upstream.once("error", (error) => {
      if (!opened) void fail(String(error)).finally(resolve);
    });
    upstream.once("open", () => {
      opened = true;
      // What the browser sent while it waited goes first, then everything it sends.
      const carried = carrier.take();
      if (carried.size) upstream.send(resizeFrame(carried.size));
      for (const bytes of carried.input) upstream.send(bytes, { binary: true });
      pipe(browser, upstream);
      resolve();
    });
    // The browser left while the connection was being made.
    browser.once("close", () => {
      if (!opened) upstream.terminate();
      resolve();
    });
  });
  if (!opened) return;
  if (browser.readyState !== browser.OPEN) {
    upstream.close(closeCodes.normal);
    return;
  }

  keepAlive(upstream);

  browser.once("close", () => {
    if (upstream.readyState === upstream.OPEN) upstream.close(closeCodes.normal);
    else upstream.terminate();
  });
  await new Promise<void>((resolve) => {
    upstream.once("close", (code, reason) => {
      if (browser.readyState === browser.OPEN) {
        if (sawClosed) browser.close(sendable(code) ? code : closeCodes.normal, reason.toString());
        else closeSocket(browser, relayLostReason, closeCodes.unreachable);
      }
      resolve();
    });
    upstream.on("error", () => {
      // `close` follows.
    });
  });
}

/** Sends every frame of `from` to `to` as it came; `from` stops being read while `to` is full. */
function pipe(from: WebSocket, to: WebSocket, onText?: (text: string) => void): void {
  from.on("message", (data: RawData, isBinary: boolean) => {
    if (to.readyState !== to.OPEN) return;
    const frame = asBytes(data);
    if (!isBinary) onText?.(frame.toString());
    to.send(frame, { binary: isBinary }, () => {
      if (from.isPaused && to.bufferedAmount < lowWaterBytes) from.resume();
    });
    if (to.bufferedAmount > peerHighWaterBytes && !from.isPaused) from.pause();
  });
}

function isClosedFrame(text: string): boolean {
  try {
    return (JSON.parse(text) as { type?: unknown }).type === "closed";
  } catch {
    return false;
  }
}

/** 1005 and 1006 describe a close; they cannot be sent in one. */
function sendable(code: number): boolean {
  return code === 1000 || (code >= 1001 && code <= 1014 && code !== 1005 && code !== 1006) || code >= 3000;
}
