/**
 * The terminal WebSocket's wire format (docs/sessions.md), the same between a browser and the
 * server and between two server instances:
 *
 * - binary frames: terminal bytes, both ways (stdin up, the session's output down);
 * - text frames: JSON control messages. Up: `{"type":"resize","cols":N,"rows":N}`. Down:
 *   `{"type":"error","message":"…"}` for a control message the server could not use (the
 *   session goes on), and `{"type":"closed","reason":"…"}` as the last frame before the server
 *   closes the socket.
 *
 * @module
 */

/** The subprotocol a client must offer (and the server selects). */
export const terminalSubprotocol = "wap.terminal.v1";
/** A subprotocol `wap.bearer.<token>` carries an access or service-account token. */
export const bearerSubprotocolPrefix = "wap.bearer.";
/** Largest frame a client may send (a paste goes in several). */
export const maxClientFrameBytes = 64 * 1024;
/** Terminal sizes accepted, in columns and rows. */
export const terminalSizeBounds = { min: 1, max: 1000 } as const;

/** A terminal size in columns (`width`) and rows (`height`), as the daemon's `resize` carries it. */
export interface TerminalSize {
  readonly width: number;
  readonly height: number;
}

/** The size a daemon's PTY starts with. */
export const initialTerminalSize: TerminalSize = { width: 80, height: 24 };

/** What a text frame from a client asks for. */
export type ControlMessage =
  | { readonly kind: "resize"; readonly size: TerminalSize }
  /** A message type this server does not know (a newer client): ignored. */
  | { readonly kind: "ignored" }
  | { readonly kind: "invalid"; readonly message: string };

const { min, max } = terminalSizeBounds;

function isDimension(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= min && value <= max;
}

/** Reads a text frame from a client. */
export function parseControlMessage(text: string): ControlMessage {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return {
      kind: "invalid",
      message: 'a text frame must be a JSON object such as {"type":"resize","cols":120,"rows":40}',
    };
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    return { kind: "invalid", message: 'a text frame must be a JSON object with a "type"' };
  }
  const message = parsed as Record<string, unknown>;
  if (typeof message.type !== "string") {
    return { kind: "invalid", message: 'a text frame must be a JSON object with a "type"' };
  }
  if (message.type !== "resize") return { kind: "ignored" };
  if (!isDimension(message.cols) || !isDimension(message.rows)) {
    return {
      kind: "invalid",
      message: `resize needs integer "cols" and "rows" between ${min} and ${max}`,
    };
  }
  return { kind: "resize", size: { width: message.cols, height: message.rows } };
}

/** The resize control message for `size`, as a client sends it (one instance forwarding to another). */
export function resizeFrame(size: TerminalSize): string {
  return JSON.stringify({ type: "resize", cols: size.width, rows: size.height });
}

/** The last frame the server sends before it closes the socket. */
export function closedFrame(reason: string): string {
  return JSON.stringify({ type: "closed", reason });
}

/** Tells the client one of its control messages was refused. */
export function errorFrame(message: string): string {
  return JSON.stringify({ type: "error", message });
}

/**
 * WebSocket close codes the server uses: normal when the session ended, going away when the
 * server stops, internal error when the server failed, and the application code 4503 when the
 * instance relaying the session could not be reached.
 */
export const closeCodes = { normal: 1000, goingAway: 1001, internal: 1011, unreachable: 4503 } as const;

/** A close reason fits in a control frame (123 bytes); the full reason is in the `closed` frame. */
export function closeReasonText(reason: string): string {
  const encoder = new TextEncoder();
  if (encoder.encode(reason).length <= 123) return reason;
  let cut = reason.slice(0, 120);
  while (encoder.encode(`${cut}…`).length > 123) cut = cut.slice(0, -1);
  return `${cut}…`;
}
