/**
 * Traces: with OTEL_EXPORTER_OTLP_ENDPOINT set, the server sends a span per RPC, with its storage
 * calls as child spans, to an OTLP/HTTP receiver (here a small HTTP server on 127.0.0.1).
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { restCall, signUpWithWorkspace } from "@wap/test-kit/http";
import { startTestServer } from "@wap/test-kit/server";
import { until } from "@wap/test-kit/until";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

interface ReceivedSpan {
  readonly name: string;
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId?: string;
  readonly attributes: { key: string; value: { stringValue?: string } }[];
}

describe("OTLP traces", () => {
  const spans: ReceivedSpan[] = [];
  const services: string[] = [];
  let receiver: http.Server;
  const saved = { ...process.env };

  beforeAll(async () => {
    receiver = http.createServer((req, res) => {
      let body = "";
      req.on("data", (chunk: Buffer) => {
        body += chunk.toString();
      });
      req.on("end", () => {
        expect(req.url).toBe("/v1/traces");
        const payload = JSON.parse(body) as {
          resourceSpans: {
            resource: { attributes: { key: string; value: { stringValue: string } }[] };
            scopeSpans: { spans: ReceivedSpan[] }[];
          }[];
        };
        for (const resource of payload.resourceSpans) {
          services.push(
            resource.resource.attributes.find((a) => a.key === "service.name")?.value.stringValue ?? "",
          );
          for (const scope of resource.scopeSpans) spans.push(...scope.spans);
        }
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    process.env.OTEL_EXPORTER_OTLP_PROTOCOL = "http/json";
    process.env.OTEL_SERVICE_NAME = "wap-trace-test";
    process.env.OTEL_BSP_SCHEDULE_DELAY = "100";
  });
  afterAll(async () => {
    process.env = saved;
    await new Promise((resolve) => receiver.close(resolve));
  });

  it("exports a span per RPC with its storage calls under it", async () => {
    const server = await startTestServer();
    let owner: Awaited<ReturnType<typeof signUpWithWorkspace>>;
    try {
      owner = await signUpWithWorkspace(server.url);
      const listed = await restCall(
        server.url,
        "GET",
        `/v1/workspaces/${owner.workspaceId}/teams`,
        undefined,
        {
          token: owner.accessToken,
        },
      );
      expect(listed.status).toBe(200);
    } finally {
      // Closing flushes what is still buffered.
      await server.close();
    }
    await until(() => spans.some((s) => s.name === "platform.v1.TeamService/ListTeams"));
    expect(services).toContain("wap-trace-test");
    const rpc = spans.find((s) => s.name === "platform.v1.TeamService/ListTeams")!;
    expect(rpc.attributes).toContainEqual({ key: "rpc.system", value: { stringValue: "connect_rpc" } });
    expect(rpc.attributes).toContainEqual({ key: "rpc.method", value: { stringValue: "ListTeams" } });
    const children = spans.filter((s) => s.parentSpanId === rpc.spanId);
    expect(children.length).toBeGreaterThan(0);
    for (const child of children) {
      expect(child.name).toMatch(/^storage /);
      expect(child.traceId).toBe(rpc.traceId);
    }
    // Every RPC made has its span: registration, sign-in and the workspace too.
    for (const name of [
      "platform.v1.AuthService/Register",
      "platform.v1.AuthService/Login",
      "platform.v1.WorkspaceService/CreateWorkspace",
    ]) {
      expect(spans.map((s) => s.name)).toContain(name);
    }
  });
});
