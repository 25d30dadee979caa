/**
 * Traces: with OTEL_EXPORTER_OTLP_ENDPOINT set (the settings table reads it), the server sends a span per RPC and per stream,
 * with their storage calls as child spans, to an OTLP/HTTP receiver (here a small HTTP server on
 * 127.0.0.1).
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Code } from "@connectrpc/connect";
import { WorkspaceService } from "@wap/api";
import { bearer, clientFor, streamError, transportFor } from "@wap/test-kit/clients";
import { restCall, signUpWithWorkspace } from "@wap/test-kit/http";
import { startTestServer } from "@wap/test-kit/server";
import { refusedTerminal, terminalUrl, terminalWorld } from "@wap/test-kit/terminal";
import { until } from "@wap/test-kit/until";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig, type ServerConfig } from "../src/config.js";
import { openNdjson } from "./support/ndjson.js";

interface ReceivedSpan {
  readonly name: string;
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId?: string;
  readonly startTimeUnixNano: string;
  readonly endTimeUnixNano: string;
  readonly attributes: Attribute[];
  readonly status?: { code?: number; message?: string };
  readonly events?: { name: string }[];
}

interface Attribute {
  readonly key: string;
  readonly value: { stringValue?: string; intValue?: string | number };
}

const subscribe = "platform.v1.WorkspaceService/SubscribeWorkspaceEvents";
/** OTLP's status code for an error (0: unset, 1: ok). */
const statusError = 2;

function attribute(span: ReceivedSpan, key: string): string | undefined {
  return span.attributes.find((a) => a.key === key)?.value.stringValue;
}

describe("OTLP traces", () => {
  const spans: ReceivedSpan[] = [];
  const services: string[] = [];
  let receiver: http.Server;
  const saved = { ...process.env };
  let otel: Pick<ServerConfig, "otlpEndpoint" | "otlpTracesEndpoint" | "otelServiceName">;

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
    const { config } = parseConfig([], {
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/`,
      OTEL_SERVICE_NAME: "wap-trace-test",
    });
    otel = {
      otlpEndpoint: config.otlpEndpoint,
      otlpTracesEndpoint: config.otlpTracesEndpoint,
      otelServiceName: config.otelServiceName,
    };
    // Read by the SDK itself.
    process.env.OTEL_EXPORTER_OTLP_PROTOCOL = "http/json";
    process.env.OTEL_BSP_SCHEDULE_DELAY = "100";
  });
  afterAll(async () => {
    process.env = saved;
    await new Promise((resolve) => receiver.close(resolve));
  });

  it("exports a span per RPC with its storage calls under it", async () => {
    const server = await startTestServer(otel);
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

  it("exports a span per stream, from its opening to its end, with the code it ended with", async () => {
    const server = await startTestServer(otel);
    const streamSpans = () => spans.filter((s) => s.name === subscribe);
    try {
      const owner = await signUpWithWorkspace(server.url, "streamer");
      const outsider = await signUpWithWorkspace(server.url, "outsider");

      // Over REST (NDJSON): subscribed, then the client goes away.
      const lines = await openNdjson(server.url, `/v1/workspaces/${owner.workspaceId}/events:subscribe`, {
        token: owner.accessToken,
      });
      expect(lines.status).toBe(200);
      lines.close();

      // Over gRPC: subscribed (the headers go out once it is), then cancelled by the client.
      const client = clientFor(WorkspaceService, transportFor("grpc-h2", server.url));
      const controller = new AbortController();
      let onHeader = () => {};
      const accepted = new Promise<void>((resolve) => {
        onHeader = resolve;
      });
      const reading = (async () => {
        for await (const _ of client.subscribeWorkspaceEvents(
          { workspaceId: owner.workspaceId },
          bearer(owner.accessToken, { signal: controller.signal, onHeader }),
        )) {
          // no events are made
        }
      })().catch(() => undefined);
      await accepted;
      controller.abort();
      await reading;

      // Refused before it starts: a workspace the caller is not in.
      const refused = await streamError(
        client.subscribeWorkspaceEvents({ workspaceId: owner.workspaceId }, bearer(outsider.accessToken)),
      );
      expect(refused?.code).toBe(Code.NotFound);

      // Each span is sent when its stream ends.
      await until(() => streamSpans().length >= 3);
    } finally {
      await server.close();
    }

    const [ended, endedSpans] = [streamSpans(), spans];
    const left = ended.filter((s) => attribute(s, "wap.stream.code") === "canceled");
    expect(left).toHaveLength(2);
    for (const span of left) {
      expect(span.status?.code ?? 0).not.toBe(statusError);
      expect(span.events?.map((e) => e.name)).toContain("accepted");
      expect(attribute(span, "wap.subject")).toBe("user");
      expect(attribute(span, "rpc.method")).toBe("SubscribeWorkspaceEvents");
      expect(BigInt(span.endTimeUnixNano)).toBeGreaterThan(BigInt(span.startTimeUnixNano));
      // The access check and the subscription's reads are its children.
      const children = endedSpans.filter((s) => s.parentSpanId === span.spanId);
      expect(children.length).toBeGreaterThan(0);
      for (const child of children) expect(child.name).toMatch(/^storage /);
    }
    const notFound = ended.find((s) => attribute(s, "wap.stream.code") === "not_found");
    expect(notFound?.status).toMatchObject({ code: statusError, message: "not_found" });
    expect(attribute(notFound!, "rpc.connect_rpc.error_code")).toBe("not_found");
    expect(attribute(notFound!, "wap.workspace_id")).toBeDefined();
    expect(notFound?.events?.map((e) => e.name) ?? []).not.toContain("accepted");
  });

  it("exports the spans of a terminal: the daemon's control and session streams and the browser's socket", async () => {
    const server = await startTestServer({ ...otel, daemonKeepaliveSeconds: 3600 });
    const named = (name: string) => spans.filter((s) => s.name === name);
    let world: Awaited<ReturnType<typeof terminalWorld>>;
    try {
      world = await terminalWorld(server.url, "traced");
      // A refused handshake (no such session) is logged with who asked, like any request.
      const missing = "00000000-0000-4000-8000-000000000001";
      const refusal = await refusedTerminal(terminalUrl(server.url, world.workspaceId, missing), {
        token: world.accessToken,
      });
      expect(refusal.status).toBe(404);
      const { daemon, stream, browser } = await world.openedSession("traced-1");
      // The browser leaving ends the session: the daemon's stream is told, then ends.
      browser.close();
      expect((await stream.next()).msg.case).toBe("close");
      expect(await stream.ended()).toBeUndefined();
      // Each HTTP/2 stream is over once the daemon ends its side too.
      stream.halfClose();
      daemon.control.cancel();
      await until(
        () =>
          named("terminal").length > 1 &&
          named("platform.v1.DaemonSessionService/Session").length > 0 &&
          named("platform.v1.DaemonControlService/Connect").length > 0,
      );
    } finally {
      await server.close();
    }

    const socket = named("terminal").find((s) => s.events?.some((e) => e.name === "upgraded"));
    expect(attribute(socket!, "wap.stream.code")).toBe("ok");
    const refused = named("terminal").find((s) => s !== socket);
    expect(attribute(refused!, "wap.stream.code")).toBe("not_found");
    expect(socket!.events?.map((e) => e.name)).toContain("upgraded");
    expect(attribute(socket!, "wap.subject_id")).toBe(world.userId);
    expect(socket!.attributes).toContainEqual({ key: "websocket.close_code", value: { intValue: 1000 } });

    const [session] = named("platform.v1.DaemonSessionService/Session");
    expect(attribute(session!, "wap.stream.code")).toBe("ok");
    expect(session!.events?.map((e) => e.name)).toContain("session.claimed");
    expect(attribute(session!, "wap.subject")).toBe("daemon");

    const [control] = named("platform.v1.DaemonControlService/Connect");
    // A daemon leaving is how its control stream ends: that is `ok`, not `canceled`.
    expect(attribute(control!, "wap.stream.code")).toBe("ok");
    expect(control!.events?.map((e) => e.name)).toContain("daemon.online");
    expect(spans.some((s) => s.parentSpanId === control!.spanId && s.name.startsWith("storage "))).toBe(true);

    const terminalLines = server.logs
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.msg === "request" && l.rpc === "terminal");
    expect(terminalLines.find((l) => l.status === 404)).toMatchObject({
      code: "not_found",
      subject: "user",
      subjectId: world.userId,
      workspaceId: world.workspaceId,
    });
    // The socket's request line is written when it closes, with who it was and how it ended.
    const line = terminalLines.find((l) => l.status === 101);
    expect(line).toMatchObject({
      status: 101,
      code: "ok",
      closeCode: 1000,
      subject: "user",
      subjectId: world.userId,
      workspaceId: world.workspaceId,
    });
  });
});
