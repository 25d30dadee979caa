/**
 * A terminal in the page: xterm over the terminal WebSocket of a session (docs/sessions.md).
 * Binary frames are bytes both ways; text frames are JSON control messages. The session cookie
 * authenticates the socket, so no token is ever handed to script.
 */
import { FitAddon } from "@xterm/addon-fit";
import { Terminal as XTerm } from "@xterm/xterm";
import "@xterm/xterm/css/xterm.css";
import { useEffect, useRef, useState } from "react";

export default function Terminal({ workspaceId, sessionId }: { workspaceId: string; sessionId: string }) {
  const host = useRef<HTMLDivElement>(null);
  const [state, setState] = useState<{ text: string; ended: boolean }>({ text: "Connecting…", ended: false });

  useEffect(() => {
    const term = new XTerm({ screenReaderMode: true, cursorBlink: true, convertEol: false, fontSize: 14 });
    const fit = new FitAddon();
    term.loadAddon(fit);
    term.open(host.current!);
    fit.fit();
    term.focus();
    const scheme = window.location.protocol === "https:" ? "wss" : "ws";
    const ws = new WebSocket(
      `${scheme}://${window.location.host}/v1/workspaces/${encodeURIComponent(workspaceId)}/sessions/${encodeURIComponent(sessionId)}/terminal`,
      ["wap.terminal.v1"],
    );
    ws.binaryType = "arraybuffer";
    const sendSize = () => {
      if (ws.readyState === WebSocket.OPEN)
        ws.send(JSON.stringify({ type: "resize", cols: term.cols, rows: term.rows }));
    };
    ws.onopen = () => {
      setState({ text: "Connected", ended: false });
      sendSize();
    };
    ws.onmessage = (event) => {
      if (typeof event.data !== "string") {
        term.write(new Uint8Array(event.data as ArrayBuffer));
        return;
      }
      const control = JSON.parse(event.data) as { type: string; reason?: string; message?: string };
      if (control.type === "closed")
        setState({ text: `Session ended: ${control.reason ?? ""}`, ended: true });
      if (control.type === "error") setState({ text: `Error: ${control.message ?? ""}`, ended: false });
    };
    ws.onclose = (event) =>
      setState((s) =>
        s.ended ? s : { text: `Disconnected${event.reason ? `: ${event.reason}` : ""}`, ended: true },
      );
    const encoder = new TextEncoder();
    const input = term.onData((data) => {
      if (ws.readyState === WebSocket.OPEN) ws.send(encoder.encode(data));
    });
    const resized = term.onResize(sendSize);
    const observer = new ResizeObserver(() => fit.fit());
    observer.observe(host.current!);
    return () => {
      observer.disconnect();
      input.dispose();
      resized.dispose();
      ws.close(1000);
      term.dispose();
    };
  }, [workspaceId, sessionId]);

  return (
    <div className="terminal-wrap">
      <p className="muted" role="status" aria-live="polite" data-testid="terminal-state">
        {state.text}
      </p>
      <div className="terminal" ref={host} role="application" aria-label="Terminal" />
    </div>
  );
}
