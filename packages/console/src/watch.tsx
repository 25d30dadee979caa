/**
 * A read-only view of a live SSH login: xterm over the watch WebSocket (docs/sessions.md,
 * "Watching an SSH login"). The server sends the login's output as binary frames and its size,
 * markers and end as JSON text frames; nothing typed here is sent. The session cookie
 * authenticates the socket.
 */
import { Terminal as XTerm } from "@xterm/xterm";
import "@xterm/xterm/css/xterm.css";
import { useEffect, useRef, useState } from "react";

export default function Watch({ workspaceId, sessionId }: { workspaceId: string; sessionId: string }) {
  const host = useRef<HTMLDivElement>(null);
  const [state, setState] = useState<{ text: string; ended: boolean }>({ text: "Connecting…", ended: false });

  useEffect(() => {
    // The login's own size, as the server says it: the view follows, it does not fit.
    const term = new XTerm({ screenReaderMode: true, disableStdin: true, cursorBlink: false, fontSize: 14 });
    term.open(host.current!);
    const scheme = window.location.protocol === "https:" ? "wss" : "ws";
    const ws = new WebSocket(
      `${scheme}://${window.location.host}/v1/workspaces/${encodeURIComponent(workspaceId)}/sessions/${encodeURIComponent(sessionId)}/watch`,
      ["wap.terminal.v1"],
    );
    ws.binaryType = "arraybuffer";
    ws.onopen = () => setState({ text: "Watching (read-only)", ended: false });
    ws.onmessage = (event) => {
      if (typeof event.data !== "string") {
        term.write(new Uint8Array(event.data as ArrayBuffer));
        return;
      }
      const control = JSON.parse(event.data) as {
        type: string;
        cols?: number;
        rows?: number;
        text?: string;
        reason?: string;
      };
      if (control.type === "resize" && control.cols && control.rows) term.resize(control.cols, control.rows);
      if (control.type === "marker")
        setState({ text: `Watching (read-only): ${control.text ?? ""}`, ended: false });
      if (control.type === "closed") setState({ text: `Login ended: ${control.reason ?? ""}`, ended: true });
    };
    ws.onclose = (event) =>
      setState((s) => {
        if (s.ended) return s;
        // A refused handshake tells a page nothing but the close.
        if (event.code === 1006 && s.text === "Connecting…") {
          return {
            text: "The watch was refused: the login ended, is not recorded (its daemon did not record sessions when it began), or you may not watch it.",
            ended: true,
          };
        }
        return { text: `Disconnected${event.reason ? `: ${event.reason}` : ""}`, ended: true };
      });
    return () => {
      ws.close(1000);
      term.dispose();
    };
  }, [workspaceId, sessionId]);

  return (
    <div className="terminal-wrap">
      <p className="muted" role="status" aria-live="polite" data-testid="watch-state">
        {state.text}
      </p>
      <div className="terminal" ref={host} role="application" aria-label="Watched login (read-only)" />
    </div>
  );
}
