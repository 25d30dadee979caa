import http from "node:http";
import { startTestServer, type TestServer } from "@wap/test-kit/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

describe("HTTP/1.1 connections after a request refused before its body was read", () => {
  let server: TestServer;
  // One socket: every request below travels on the same connection.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    agent.destroy();
    await server.close();
  });

  function post(path: string, contentType: string, body: string) {
    return new Promise<{ status: number; text: string; socket: unknown }>((resolve, reject) => {
      const req = http.request(`${server.url}${path}`, {
        method: "POST",
        agent,
        headers: { "content-type": contentType },
      });
      req.on("error", reject);
      req.on("response", (res) => {
        let text = "";
        res.setEncoding("latin1");
        res.on("data", (chunk: string) => (text += chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text, socket: req.socket }));
      });
      req.end(body);
    });
  }

  it("carry the next request once a gRPC-Web message over the size limit was refused", async () => {
    const oversized = JSON.stringify({ name: "x".repeat(1_100_000) });
    for (const type of ["application/grpc-web+json", "application/grpc-web+proto"]) {
      const refused = await post("/platform.v1.UtilService/GetVersion", type, oversized);
      expect(refused.text).toMatch(/grpc-status: 8/);
      const next = await post("/platform.v1.UtilService/GetVersion", "application/json", "{}");
      expect(next.status).toBe(200);
      expect(JSON.parse(next.text)).toMatchObject({ version: expect.any(String) });
      // The same connection carried both.
      expect(next.socket).toBe(refused.socket);
    }
  });
});
