import http from "node:http";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import {
  ConnectResponseSchema,
  DaemonControlService,
  GetVersionResponseSchema,
  SubscribeWorkspaceEventsResponseSchema,
  UtilService,
  WorkspaceService,
} from "@wap/api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { answerUndecodableAsInvalidArgument, undecodableRequests } from "./undecodable-requests.js";

// Not protobuf: field 15 with wire type 3 (a group that never ends).
const notProtobuf = Buffer.from("{}");

function envelope(flags: number, data: Uint8Array): Buffer {
  const head = Buffer.alloc(5);
  head[0] = flags;
  head.writeUInt32BE(data.byteLength, 1);
  return Buffer.concat([head, data]);
}

describe("requests the protocol layer cannot decode", () => {
  const seen: string[] = [];
  const handler = connectNodeAdapter({
    interceptors: [undecodableRequests],
    routes(router) {
      router.service(UtilService, {
        getVersion: () => create(GetVersionResponseSchema, { version: "1" }),
        listRoles: () => {
          // A fault of a decoded call: must stay internal.
          throw new ConnectError("internal error (request id x)", Code.Internal);
        },
      });
      router.rpc(WorkspaceService.method.subscribeWorkspaceEvents, async function* () {
        yield create(SubscribeWorkspaceEventsResponseSchema, {});
      });
      router.rpc(DaemonControlService.method.connect, async function* (messages) {
        try {
          for await (const _ of messages) yield create(ConnectResponseSchema, {});
        } catch (error) {
          seen.push(ConnectError.from(error).code === Code.InvalidArgument ? "invalid_argument" : "other");
          throw error;
        }
      });
      answerUndecodableAsInvalidArgument(router);
    },
  });
  const h1 = http.createServer(handler);
  const h2 = http2.createServer(handler);
  let h1Url = "";
  let h2Url = "";

  beforeAll(async () => {
    for (const server of [h1, h2])
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    h1Url = `http://127.0.0.1:${(h1.address() as AddressInfo).port}`;
    h2Url = `http://127.0.0.1:${(h2.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    for (const server of [h1, h2]) await new Promise((resolve) => server.close(resolve));
  });

  const path = (method: { parent: { typeName: string }; name: string }) =>
    `/${method.parent.typeName}/${method.name}`;

  it("Connect unary: a body that is not protobuf is invalid_argument (400), not internal", async () => {
    const res = await fetch(`${h1Url}${path(UtilService.method.getVersion)}`, {
      method: "POST",
      headers: { "content-type": "application/proto" },
      body: notProtobuf,
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { code: string; message: string };
    expect(body.code).toBe("invalid_argument");
    expect(body.message).toMatch(/could not be decoded.*premature EOF/);
  });

  it("Connect GET: a message that is not base64 is invalid_argument (400)", async () => {
    const res = await fetch(
      `${h1Url}${path(UtilService.method.getVersion)}?connect=v1&encoding=json&base64=1&message=!!not*base64`,
    );
    expect(res.status).toBe(400);
    expect(((await res.json()) as { code: string }).code).toBe("invalid_argument");
  });

  it("a fault of a call that was decoded stays internal", async () => {
    const res = await fetch(`${h1Url}${path(UtilService.method.listRoles)}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(res.status).toBe(500);
    expect(((await res.json()) as { code: string }).code).toBe("internal");
  });

  it("gRPC-Web: the trailer frame says invalid_argument", async () => {
    const res = await fetch(`${h1Url}${path(UtilService.method.getVersion)}`, {
      method: "POST",
      headers: { "content-type": "application/grpc-web+proto" },
      body: envelope(0, notProtobuf),
    });
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(bytes[0]).toBe(0x80);
    expect(bytes.subarray(5).toString("latin1")).toMatch(/grpc-status: 3\r\n/);
  });

  async function http2Call(procedure: string, contentType: string, body: Buffer) {
    const session = http2.connect(h2Url);
    try {
      return await new Promise<{
        headers: http2.IncomingHttpHeaders;
        trailers: http2.IncomingHttpHeaders;
        data: Buffer;
      }>((resolve, reject) => {
        const stream = session.request({
          ":method": "POST",
          ":path": procedure,
          "content-type": contentType,
          te: "trailers",
        });
        let headers: http2.IncomingHttpHeaders = {};
        let trailers: http2.IncomingHttpHeaders = {};
        const chunks: Buffer[] = [];
        stream.on("response", (h) => (headers = h));
        stream.on("trailers", (t) => (trailers = t));
        stream.on("data", (chunk: Buffer) => chunks.push(chunk));
        stream.on("end", () => resolve({ headers, trailers, data: Buffer.concat(chunks) }));
        stream.on("error", reject);
        stream.end(body);
      });
    } finally {
      session.close();
    }
  }

  it("gRPC: grpc-status 3 in the trailers", async () => {
    const { headers, trailers } = await http2Call(
      path(UtilService.method.getVersion),
      "application/grpc",
      envelope(0, notProtobuf),
    );
    expect(trailers["grpc-status"] ?? headers["grpc-status"]).toBe("3");
  });

  it("Connect server stream: the end-of-stream error is invalid_argument", async () => {
    const { data } = await http2Call(
      path(WorkspaceService.method.subscribeWorkspaceEvents),
      "application/connect+proto",
      envelope(0, notProtobuf),
    );
    const end = JSON.parse(data.subarray(5).toString("utf8"));
    expect(end.error.code).toBe("invalid_argument");
  });

  it("bidi stream: the handler reading the messages gets invalid_argument", async () => {
    const { trailers, headers } = await http2Call(
      path(DaemonControlService.method.connect),
      "application/grpc",
      envelope(0, notProtobuf),
    );
    expect(trailers["grpc-status"] ?? headers["grpc-status"]).toBe("3");
    expect(seen).toContain("invalid_argument");
  });
});
