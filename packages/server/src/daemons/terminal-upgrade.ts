/**
 * HTTP/1.1 upgrade requests on the one port. Node hands every request carrying `Upgrade` to the
 * `upgrade` listener once there is one, so the listener sorts them: WebSocket handshakes go to
 * the terminal endpoints, and anything else (curl's `--http2` on an `http://` URL asks for
 * `Upgrade: h2c`) is served as the plain HTTP/1.1 request it also is, upgrade declined, by
 * handing the connection back to the HTTP/1.1 server with the request re-read without its
 * upgrade headers.
 *
 * @module
 */
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import type { WebSocketUpgradeHandler } from "./terminal-endpoint.js";

/** Headers that only ask for the upgrade; dropped when it is declined. */
const upgradeOnly = new Set(["upgrade", "http2-settings"]);

/**
 * The `upgrade` listener of `server`: WebSocket handshakes to `onWebSocket`, the rest back to
 * `server` as a new HTTP/1.1 exchange on the same connection (`reenter` is the server's
 * connection event: `connection` in cleartext, `secureConnection` with TLS).
 */
export function routeUpgrades(
  server: { emit(event: string, ...args: unknown[]): boolean },
  reenter: "connection" | "secureConnection",
  onWebSocket: WebSocketUpgradeHandler,
): (req: IncomingMessage, socket: Duplex, head: Buffer) => void {
  return (req, socket, head) => {
    if (req.headers.upgrade?.toLowerCase() === "websocket") {
      onWebSocket(req, socket, head);
      return;
    }
    socket.unshift(Buffer.concat([Buffer.from(withoutUpgrade(req)), head]));
    server.emit(reenter, socket);
  };
}

/** The request line and headers of `req` without the upgrade, as they would have been sent. */
function withoutUpgrade(req: IncomingMessage): string {
  const lines = [`${req.method} ${req.url} HTTP/${req.httpVersion}`];
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!;
    const value = raw[i + 1]!;
    const lower = name.toLowerCase();
    if (upgradeOnly.has(lower)) continue;
    if (lower === "connection") {
      const kept = value
        .split(",")
        .map((token) => token.trim())
        .filter((token) => token !== "" && !upgradeOnly.has(token.toLowerCase()));
      if (kept.length > 0) lines.push(`${name}: ${kept.join(", ")}`);
      continue;
    }
    lines.push(`${name}: ${value}`);
  }
  return `${lines.join("\r\n")}\r\n\r\n`;
}
