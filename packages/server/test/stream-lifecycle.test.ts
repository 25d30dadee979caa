/**
 * Server streams as raw HTTP/2 clients see them, on every protocol: the response headers arrive
 * as soon as the stream is accepted (before any message), a stream that reaches its deadline ends
 * with `deadline_exceeded`, and a refusal before the stream starts still answers at once.
 */
import http2 from "node:http2";
import { create, toBinary } from "@bufbuild/protobuf";
import { SubscribeWorkspaceEventsRequestSchema } from "@wap/api";
import { signUpWithWorkspace } from "@wap/test-kit/http";
import { startTestServer, type TestServer } from "@wap/test-kit/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

let server: TestServer;
let session: http2.ClientHttp2Session;
let user: Awaited<ReturnType<typeof signUpWithWorkspace>>;

beforeAll(async () => {
  server = await startTestServer();
  user = await signUpWithWorkspace(server.url, "streams");
  session = http2.connect(server.url);
});
afterAll(async () => {
  session?.close();
  await server?.close();
});

const path = "/platform.v1.WorkspaceService/SubscribeWorkspaceEvents";

function envelope(payload: Uint8Array, flags = 0): Buffer {
  const head = Buffer.alloc(5);
  head[0] = flags;
  head.writeUInt32BE(payload.byteLength, 1);
  return Buffer.concat([head, payload]);
}

interface Protocol {
  readonly name: string;
  readonly headers: Record<string, string>;
  readonly body: (workspaceId: string) => Buffer;
  /** The protocol's deadline header for `ms` milliseconds. */
  readonly timeout: (ms: number) => Record<string, string>;
  /** The status code the stream ended with, from its trailers and the last frames of its body. */
  readonly endCode: (trailers: http2.IncomingHttpHeaders, body: Buffer) => string | undefined;
}

/** The frames of an enveloped body. */
function frames(body: Buffer): Array<{ flags: number; data: Buffer }> {
  const out: Array<{ flags: number; data: Buffer }> = [];
  for (let at = 0; at + 5 <= body.byteLength; ) {
    const length = body.readUInt32BE(at + 1);
    out.push({ flags: body[at]!, data: body.subarray(at + 5, at + 5 + length) });
    at += 5 + length;
  }
  return out;
}

const grpcCodes: Record<string, string> = { "0": "ok", "4": "deadline_exceeded", "16": "unauthenticated" };

const protocolsUnderTest: readonly Protocol[] = [
  {
    name: "gRPC",
    headers: { "content-type": "application/grpc", te: "trailers" },
    body: (workspaceId) =>
      envelope(
        toBinary(
          SubscribeWorkspaceEventsRequestSchema,
          create(SubscribeWorkspaceEventsRequestSchema, { workspaceId }),
        ),
      ),
    timeout: (ms) => ({ "grpc-timeout": `${ms}m` }),
    endCode: (trailers) => grpcCodes[String(trailers["grpc-status"])],
  },
  {
    name: "gRPC-Web",
    headers: { "content-type": "application/grpc-web+proto" },
    body: (workspaceId) =>
      envelope(
        toBinary(
          SubscribeWorkspaceEventsRequestSchema,
          create(SubscribeWorkspaceEventsRequestSchema, { workspaceId }),
        ),
      ),
    timeout: (ms) => ({ "grpc-timeout": `${ms}m` }),
    endCode: (_trailers, body) => {
      const trailer = frames(body).find((f) => (f.flags & 0x80) !== 0);
      const status = /grpc-status:\s*(\d+)/i.exec(trailer?.data.toString("latin1") ?? "")?.[1];
      return status === undefined ? undefined : grpcCodes[status];
    },
  },
  {
    name: "Connect",
    headers: { "content-type": "application/connect+json", "connect-protocol-version": "1" },
    body: (workspaceId) => envelope(Buffer.from(JSON.stringify({ workspaceId }))),
    timeout: (ms) => ({ "connect-timeout-ms": String(ms) }),
    endCode: (_trailers, body) => {
      const end = frames(body).find((f) => (f.flags & 0x02) !== 0);
      if (!end) return undefined;
      const parsed = JSON.parse(end.data.toString("utf8")) as { error?: { code: string } };
      return parsed.error?.code ?? "ok";
    },
  },
];

/** Opens the stream; resolves the response headers, and later the whole exchange. */
function open(protocol: Protocol, extra: Record<string, string>, token = user.accessToken) {
  const stream = session.request({
    ":method": "POST",
    ":path": path,
    authorization: `Bearer ${token}`,
    ...protocol.headers,
    ...extra,
  });
  const chunks: Buffer[] = [];
  stream.on("data", (chunk: Buffer) => chunks.push(chunk));
  const headers = new Promise<{ headers: http2.IncomingHttpHeaders; bytesBefore: number }>((resolve) =>
    stream.once("response", (h) => resolve({ headers: h, bytesBefore: Buffer.concat(chunks).byteLength })),
  );
  let trailers: http2.IncomingHttpHeaders = {};
  stream.once("trailers", (t) => {
    trailers = t;
  });
  const done = new Promise<{ trailers: http2.IncomingHttpHeaders; body: Buffer }>((resolve) =>
    stream.once("close", () => resolve({ trailers, body: Buffer.concat(chunks) })),
  );
  stream.end(protocol.body(user.workspaceId));
  return { stream, headers, done };
}

describe("server streams", () => {
  for (const protocol of protocolsUnderTest) {
    it(`${protocol.name}: headers arrive once the stream is accepted, before any message`, async () => {
      const call = open(protocol, {});
      const { headers, bytesBefore } = await call.headers;
      expect(headers[":status"]).toBe(200);
      expect(String(headers["content-type"])).toMatch(/^application\/(grpc|connect)/);
      // No event happened in the workspace: nothing but the head was sent.
      expect(bytesBefore).toBe(0);
      call.stream.close(http2.constants.NGHTTP2_CANCEL);
      await call.done;
    });

    it(`${protocol.name}: a stream that reaches its deadline ends with deadline_exceeded`, async () => {
      const call = open(protocol, protocol.timeout(300));
      const { trailers, body } = await call.done;
      expect(protocol.endCode(trailers, body)).toBe("deadline_exceeded");
    });

    it(`${protocol.name}: a refused stream is answered at once`, async () => {
      const call = open(protocol, {}, "not-a-token");
      const { trailers, body } = await call.done;
      const headers = await call.headers;
      expect(protocol.endCode({ ...headers.headers, ...trailers }, body)).toBe("unauthenticated");
    });
  }
});
