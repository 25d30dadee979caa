import http2 from "node:http2";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Listener, listen } from "./listener.js";

describe("listen (cleartext)", () => {
  let listener: Listener;
  beforeAll(async () => {
    listener = await listen({
      host: "127.0.0.1",
      port: 0,
      handler: (req, res) => {
        res.writeHead(200, { "content-type": "text/plain" });
        res.end(`HTTP/${req.httpVersion} ${req.method} ${req.url}`);
      },
    });
  });
  afterAll(async () => {
    await listener.close(1000);
  });

  it("tells HTTP/1.1 from the HTTP/2 preface even when the first bytes trickle in", async () => {
    const socket = net.connect(listener.port, "127.0.0.1");
    let answer = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => (answer += chunk));
    const ended = new Promise((resolve) => socket.on("end", resolve));
    // "P" could still start "PRI * HTTP/2.0"; the listener must wait for more before deciding.
    for (const part of [
      "P",
      "O",
      "ST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    ]) {
      socket.write(part);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await ended;
    expect(answer).toMatch(/^HTTP\/1\.1 200/);
    expect(answer).toContain("HTTP/1.1 POST /x");
  });

  it("serves h2c with prior knowledge on the same port", async () => {
    const session = http2.connect(`http://127.0.0.1:${listener.port}`);
    try {
      const text = await new Promise<string>((resolve, reject) => {
        const req = session.request({ ":path": "/y", ":method": "GET" });
        let body = "";
        req.setEncoding("utf8");
        req.on("data", (chunk: string) => (body += chunk));
        req.on("end", () => resolve(body));
        req.on("error", reject);
      });
      expect(text).toBe("HTTP/2.0 GET /y");
    } finally {
      session.close();
    }
  });
});

describe("listen: closing", () => {
  it("does not wait for connections that never sent a byte", async () => {
    const listener = await listen({
      host: "127.0.0.1",
      port: 0,
      handler: (_req, res) => res.end("ok"),
    });
    const silent = net.connect(listener.port, "127.0.0.1");
    silent.on("error", () => {});
    await new Promise((resolve) => silent.once("connect", resolve));
    const closedByServer = new Promise((resolve) => silent.once("close", resolve));
    // The grace period is long: closing must not wait for it.
    await listener.close(60_000);
    await closedByServer;
    expect(silent.destroyed).toBe(true);
  });
});

describe("listen: keepalive", () => {
  it("closes an HTTP/2 connection whose peer stops answering PINGs, and keeps one that answers", async () => {
    const listener = await listen({
      host: "127.0.0.1",
      port: 0,
      handler: () => {
        // A stream that never ends, like a quiet control stream.
      },
      keepaliveIntervalMs: 50,
    });
    try {
      const answering = http2.connect(`http://127.0.0.1:${listener.port}`);
      answering.on("error", () => {});
      const quiet = answering.request({ ":path": "/quiet", ":method": "POST" });
      quiet.on("error", () => {});

      // A peer that sent the preface and its SETTINGS, then vanished without a FIN.
      const vanished = net.connect(listener.port, "127.0.0.1");
      vanished.on("error", () => {});
      const emptySettings = Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]);
      vanished.write(Buffer.concat([Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), emptySettings]));
      vanished.on("data", () => {}); // reads what comes, acknowledges no PING
      await new Promise((resolve) => vanished.once("close", resolve));

      // Many intervals later the answering peer's stream is still open.
      const pings: number[] = [];
      for (let i = 0; i < 5; i++) {
        pings.push(
          await new Promise<number>((resolve, reject) =>
            answering.ping((error, duration) => (error ? reject(error) : resolve(duration))),
          ),
        );
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(pings).toHaveLength(5);
      expect(quiet.closed).toBe(false);
      expect(answering.destroyed).toBe(false);
      answering.destroy();
    } finally {
      await listener.close(100);
    }
  });
});
