/**
 * Clients that send slowly cannot hold the server: 200 connections from one address that send
 * headers and then trickle a body (or never finish their headers) are capped per address and
 * cut at the configured times, while another client is served all along. An HTTP/2 stream whose
 * body never ends is reset too, and a refused call is answered before its body is read.
 */
import http2 from "node:http2";
import net from "node:net";
import { startTestServer, type TestServer } from "@wap/test-kit/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const perClient = 40;
let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({
    headersTimeoutSeconds: 1,
    bodyTimeoutSeconds: 1,
    maxConnectionsPerClient: perClient,
  });
});
afterAll(async () => {
  await server?.close();
});

/** A GET /healthz from `localAddress` over a fresh connection: the status line. */
function probe(localAddress: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: "127.0.0.1", port: server.port, localAddress }, () =>
      socket.write("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
    );
    let text = "";
    socket.on("data", (chunk) => {
      text += chunk.toString();
    });
    socket.once("close", () => resolve(text.split("\r\n", 1)[0] ?? ""));
    socket.once("error", reject);
  });
}

interface Slow {
  readonly closed: Promise<void>;
  readonly received: () => string;
}

/** A connection that sends headers (all, or only some) then one byte of body every 100 ms. */
function slowClient(kind: "body" | "headers"): Slow {
  const socket = net.connect({ host: "127.0.0.1", port: server.port, localAddress: "127.0.0.1" });
  let received = "";
  let timer: NodeJS.Timeout | undefined;
  socket.on("data", (chunk) => {
    received += chunk.toString();
  });
  socket.on("error", () => undefined);
  socket.once("connect", () => {
    socket.write(
      kind === "body"
        ? "POST /platform.v1.AuthService/Login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"
        : "POST /platform.v1.AuthService/Login HTTP/1.1\r\nHost: x\r\n",
    );
    timer = setInterval(() => socket.write(kind === "body" ? " " : "X-A: b\r\n"), 100);
  });
  const closed = new Promise<void>((resolve) =>
    socket.once("close", () => {
      clearInterval(timer);
      resolve();
    }),
  );
  return { closed, received: () => received };
}

describe("slow clients", () => {
  it("caps, cuts and sheds 200 slow connections while serving another client", async () => {
    const slow = Array.from({ length: 200 }, (_, i) => slowClient(i % 2 === 0 ? "body" : "headers"));
    // While they trickle, another address is served at once.
    expect(await probe("127.0.0.2")).toBe("HTTP/1.1 200 OK");
    // All 200 end, each either refused by the per-address cap or cut by a timeout.
    await Promise.all(slow.map((s) => s.closed));
    const cut = slow.filter((s) => s.received().startsWith("HTTP/1.1 408"));
    expect(cut.length).toBeGreaterThan(0);
    expect(cut.length).toBeLessThanOrEqual(perClient);
    // The address may connect again once its connections are gone.
    expect(await probe("127.0.0.1")).toBe("HTTP/1.1 200 OK");
    expect(server.logs.some((line) => line.includes("request body too slow"))).toBe(true);
  });

  it("resets an HTTP/2 request whose body never ends", async () => {
    const session = http2.connect(server.url);
    try {
      const stream = session.request({
        ":method": "POST",
        ":path": "/platform.v1.AuthService/Login",
        "content-type": "application/json",
      });
      stream.write("{");
      const outcome = await new Promise<string>((resolve) => {
        stream.on("response", (headers) => resolve(`status ${headers[":status"]}`));
        stream.on("error", (error) => resolve(`error ${(error as { code?: string }).code}`));
        stream.on("close", () => resolve(`closed ${stream.rstCode}`));
      });
      expect(outcome).toBe("status 408");
      await new Promise<void>((resolve) =>
        stream.closed ? resolve() : stream.once("close", () => resolve()),
      );
      expect(stream.rstCode).toBe(http2.constants.NGHTTP2_CANCEL);
    } finally {
      session.destroy();
    }
  });

  it("answers a call it refuses before reading its body, and closes the HTTP/1.1 connection", async () => {
    const socket = net.connect({ host: "127.0.0.1", port: server.port, localAddress: "127.0.0.3" });
    let received = "";
    socket.on("data", (chunk) => {
      received += chunk.toString();
    });
    socket.on("error", () => undefined);
    // A bearer token that does not authenticate: the answer is known from the headers.
    socket.write(
      "POST /platform.v1.UserService/Whoami HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer nope\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{",
    );
    await new Promise<void>((resolve) => socket.once("close", () => resolve()));
    expect(received).toMatch(/^HTTP\/1\.1 401 /);
    expect(received.toLowerCase()).toContain("connection: close");
    expect(received).toContain('"code":"unauthenticated"');
  });
});
