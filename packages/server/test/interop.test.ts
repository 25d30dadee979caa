/**
 * Clients we did not write, against the running server: Python grpcio with stubs that Debian's
 * protoc 3.21 and grpc_python_plugin generate from the published proto3 files (unary calls, a
 * server stream and its deadline, error details, health checking, reflection, an unknown
 * procedure); curl speaking gRPC-Web (binary, JSON and base64 text) and raw gRPC over h2c; `buf curl` without a
 * schema, discovering everything through reflection.
 */
import { execFile, spawn } from "node:child_process";
import { copyFile, mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  HealthCheckRequestSchema,
  HealthCheckResponse_ServingStatus,
  HealthCheckResponseSchema,
  LoginRequestSchema,
  LoginResponseSchema,
} from "@wap/api";
import { signUpWithWorkspace } from "@wap/test-kit/http";
import { startTestServer, type TestServer } from "@wap/test-kit/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const run = promisify(execFile);
const repo = join(import.meta.dirname, "../../..");
const protoRoot = join(repo, "proto");

let server: TestServer;
let account: Awaited<ReturnType<typeof signUpWithWorkspace>>;
let work: string;

beforeAll(async () => {
  server = await startTestServer();
  account = await signUpWithWorkspace(server.url, "interop");
  work = await mkdtemp(join(tmpdir(), "wap-interop-"));
}, 60_000);

afterAll(async () => {
  await server?.close();
  await rm(work, { recursive: true, force: true });
});

/** Python stubs of every published proto, made by Debian's protoc and grpc_python_plugin. */
async function pythonStubs(): Promise<string> {
  const out = join(work, "python");
  await mkdir(out, { recursive: true });
  const contract = (await readdir(join(protoRoot, "platform", "v1"))).map((f) => `platform/v1/${f}`);
  await writeFile(
    join(out, "status.proto"),
    'syntax = "proto3";\npackage google.rpc;\nimport "google/protobuf/any.proto";\n' +
      "message Status { int32 code = 1; string message = 2; repeated google.protobuf.Any details = 3; }\n",
  );
  await run(
    "/usr/bin/protoc",
    [
      "-I",
      protoRoot,
      "-I",
      join(protoRoot, "third_party"),
      "-I",
      out,
      `--python_out=${out}`,
      `--grpc_python_out=${out}`,
      "--plugin=protoc-gen-grpc_python=/usr/bin/grpc_python_plugin",
      ...contract,
      "google/api/annotations.proto",
      "google/api/http.proto",
      "grpc/health/v1/health.proto",
      "grpc/reflection/v1/reflection.proto",
      "status.proto",
    ],
    { cwd: protoRoot },
  );
  // `platform` is also a module of Python's standard library: make ours a regular package.
  await writeFile(join(out, "platform", "__init__.py"), "");
  await writeFile(join(out, "platform", "v1", "__init__.py"), "");
  await copyFile(join(import.meta.dirname, "interop", "grpcio_client.py"), join(out, "client.py"));
  return out;
}

describe("Python grpcio", () => {
  it("calls unary and streaming RPCs, reads error details, health and reflection", async () => {
    const stubs = await pythonStubs();
    const { stdout } = await run(
      "/usr/bin/python3",
      [join(stubs, "client.py"), `127.0.0.1:${server.port}`, JSON.stringify(account)],
      { cwd: stubs, env: { ...process.env, PYTHONPATH: stubs }, timeout: 60_000 },
    );
    const out = JSON.parse(stdout);
    expect(out.login_has_token).toBe(true);
    expect(out.workspace_names).toEqual(["interop workspace"]);
    expect(out.bad_request).toEqual({
      code: "INVALID_ARGUMENT",
      detail_types: ["type.googleapis.com/google.rpc.ErrorInfo", "type.googleapis.com/google.rpc.BadRequest"],
      mentions_field: true,
    });
    expect(out.initial_metadata_before_deadline).toBe(true);
    expect(out.stream_end).toBe("DEADLINE_EXCEEDED");
    expect(out.unknown).toBe("UNIMPLEMENTED");
    expect(out.health).toEqual({
      "": "SERVING",
      "platform.v1.UserService": "SERVING",
      "grpc.health.v1.Health": "SERVING",
    });
    expect(out.health_unknown).toBe("NOT_FOUND");
    expect(out.health_watch_first).toBe("SERVING");
    expect(out.reflected_services).toEqual(
      expect.arrayContaining([
        "platform.v1.CertificateService",
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection",
      ]),
    );
    expect(out.reflected_methods).toContain("SignSSHCertificate");
    expect(out.reflected_name_oneof).toBe("_name");
    expect(out.reflected_syntax).toBe("proto3");
  }, 120_000);
});

function envelope(payload: Uint8Array, flags = 0): Buffer {
  const head = Buffer.alloc(5);
  head[0] = flags;
  head.writeUInt32BE(payload.byteLength, 1);
  return Buffer.concat([head, payload]);
}

function frames(body: Buffer): Array<{ flags: number; data: Buffer }> {
  const out: Array<{ flags: number; data: Buffer }> = [];
  for (let at = 0; at + 5 <= body.byteLength; ) {
    const length = body.readUInt32BE(at + 1);
    out.push({ flags: body[at]!, data: body.subarray(at + 5, at + 5 + length) });
    at += 5 + length;
  }
  return out;
}

/** curl posting `body`; the response headers (and HTTP/2 trailers) and body. */
async function curl(path: string, contentType: string, body: Buffer, extra: string[] = []) {
  const request = join(work, `request-${Math.random().toString(36).slice(2)}`);
  const response = `${request}.out`;
  await writeFile(request, body);
  const { stdout } = await run(
    "curl",
    [
      "-sS",
      "-D",
      "-",
      "-o",
      response,
      "-H",
      `content-type: ${contentType}`,
      "--data-binary",
      `@${request}`,
      ...extra,
      `${server.url}${path}`,
    ],
    { encoding: "buffer", timeout: 30_000 },
  );
  const { readFile } = await import("node:fs/promises");
  return { head: stdout.toString("latin1").toLowerCase(), body: await readFile(response) };
}

describe("curl", () => {
  const login = () => create(LoginRequestSchema, { email: account.email, password: account.password });

  it("speaks gRPC-Web with binary messages", async () => {
    const { head, body } = await curl(
      "/platform.v1.AuthService/Login",
      "application/grpc-web+proto",
      envelope(toBinary(LoginRequestSchema, login())),
    );
    expect(head).toMatch(/^http\/1\.1 200/);
    const [message, trailer] = frames(body);
    expect(message?.flags).toBe(0);
    expect(fromBinary(LoginResponseSchema, message!.data).accessToken.length).toBeGreaterThan(0);
    expect(trailer?.flags).toBe(0x80);
    expect(trailer!.data.toString("latin1")).toMatch(/grpc-status:\s*0/);
  });

  it("speaks gRPC-Web with JSON messages, and names a bad field in its status", async () => {
    const { body } = await curl(
      "/platform.v1.AuthService/Login",
      "application/grpc-web+json",
      envelope(Buffer.from(JSON.stringify({ email: account.email, password: account.password }))),
    );
    const [message, trailer] = frames(body);
    expect(JSON.parse(message!.data.toString("utf8")).accessToken).toBeTruthy();
    expect(trailer!.data.toString("latin1")).toMatch(/grpc-status:\s*0/);

    const bad = await curl(
      "/platform.v1.AuthService/Login",
      "application/grpc-web+json",
      envelope(Buffer.from('{"email": 42}')),
    );
    const status = frames(bad.body)
      .find((f) => f.flags === 0x80)!
      .data.toString("latin1");
    expect(status).toMatch(/grpc-status:\s*3/);
    expect(decodeURIComponent(/grpc-message:\s*(.*)/.exec(status)![1]!)).toContain(
      "email: expected a string",
    );
  });

  it("speaks raw gRPC over h2c", async () => {
    const { head, body } = await curl(
      "/platform.v1.AuthService/Login",
      "application/grpc",
      envelope(toBinary(LoginRequestSchema, login())),
      ["--http2-prior-knowledge", "-H", "te: trailers"],
    );
    expect(head).toMatch(/^http\/2 200/);
    expect(head).toMatch(/grpc-status: 0/);
    expect(fromBinary(LoginResponseSchema, frames(body)[0]!.data).refreshToken.length).toBeGreaterThan(0);
  });

  it("hears unimplemented in its own protocol for an unknown procedure", async () => {
    const grpc = await curl(
      "/platform.v1.UserService/NoSuchMethod",
      "application/grpc",
      envelope(Buffer.alloc(0)),
      ["--http2-prior-knowledge", "-H", "te: trailers"],
    );
    expect(grpc.head).toMatch(/^http\/2 200/);
    expect(grpc.head).toMatch(/content-type: application\/grpc/);
    expect(grpc.head).toMatch(/grpc-status: 12/);
    const web = await curl(
      "/grpc.health.v1.Health/NoSuchCheck",
      "application/grpc-web+proto",
      envelope(Buffer.alloc(0)),
    );
    expect(web.head).toMatch(/^http\/1\.1 200/);
    expect(web.head).toMatch(/content-type: application\/grpc-web\+proto/);
    expect(web.head).toMatch(/grpc-status: 12/);
    const connect = await curl(
      "/platform.v1.UserService/NoSuchMethod",
      "application/json",
      Buffer.from("{}"),
      ["-H", "connect-protocol-version: 1"],
    );
    expect(connect.head).toMatch(/^http\/1\.1 404/);
    expect(JSON.parse(connect.body.toString("utf8")).code).toBe("unimplemented");
  });
});

/** A gRPC-Web text body: base64 in 4-character groups, each chunk padded on its own. */
function fromText(body: Buffer): Buffer {
  const text = body.toString("latin1");
  expect(text).toMatch(/^(?:[A-Za-z0-9+/]{4}|[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)*$/);
  return Buffer.concat((text.match(/.{4}/g) ?? []).map((group) => Buffer.from(group, "base64")));
}

describe("curl speaking gRPC-Web text", () => {
  const login = () => create(LoginRequestSchema, { email: account.email, password: account.password });
  const text = (bytes: Buffer) => Buffer.from(bytes.toString("base64"));

  for (const http of ["HTTP/1.1", "HTTP/2"] as const) {
    const extra = http === "HTTP/2" ? ["--http2-prior-knowledge"] : [];

    it(`calls a unary RPC over ${http} and reads the answer in base64`, async () => {
      const { head, body } = await curl(
        "/platform.v1.AuthService/Login",
        "application/grpc-web-text",
        text(envelope(toBinary(LoginRequestSchema, login()))),
        ["-H", "accept: application/grpc-web-text", ...extra],
      );
      expect(head).toMatch(http === "HTTP/2" ? /^http\/2 200/ : /^http\/1\.1 200/);
      expect(head).toMatch(/content-type: application\/grpc-web-text\+proto/);
      const [message, trailer] = frames(fromText(body));
      expect(fromBinary(LoginResponseSchema, message!.data).accessToken.length).toBeGreaterThan(0);
      expect(trailer?.flags).toBe(0x80);
      expect(trailer!.data.toString("latin1")).toMatch(/grpc-status:\s*0/);
    });

    it(`hears unimplemented in text over ${http} for an unknown procedure`, async () => {
      const { head } = await curl(
        "/platform.v1.UserService/NoSuchMethod",
        "application/grpc-web-text",
        text(envelope(Buffer.alloc(0))),
        extra,
      );
      expect(head).toMatch(/content-type: application\/grpc-web-text\+proto/);
      expect(head).toMatch(/grpc-status: 12/);
    });
  }

  it("accepts a request split into padded chunks, and names a bad field", async () => {
    // Two chunks, the first padded: as a client that flushes twice would send them.
    const frame = envelope(
      toBinary(LoginRequestSchema, create(LoginRequestSchema, { email: "not an email" })),
    );
    const split = Buffer.concat([text(frame.subarray(0, 4)), text(frame.subarray(4))]);
    expect(split.toString().indexOf("=")).toBeLessThan(split.length - 2);
    const { body } = await curl("/platform.v1.AuthService/Login", "application/grpc-web-text", split);
    const trailer = frames(fromText(body))
      .find((f) => f.flags === 0x80)!
      .data.toString("latin1");
    expect(trailer).toMatch(/grpc-status:\s*3/);
    expect(decodeURIComponent(/grpc-message:\s*(.*)/.exec(trailer)![1]!)).toMatch(/email/);
  });

  it("refuses a body that is not base64 as invalid_argument", async () => {
    const { head, body } = await curl(
      "/platform.v1.AuthService/Login",
      "application/grpc-web-text",
      Buffer.from("AAAA!AAA"),
    );
    expect(head).toMatch(/content-type: application\/grpc-web-text\+proto/);
    const status = [head, ...frames(fromText(body)).map((f) => f.data.toString("latin1"))].join("\n");
    expect(status).toMatch(/grpc-status:\s*3/);
    expect(decodeURIComponent(/grpc-message:\s*(.*)/.exec(status)![1]!.trim())).toContain("base64");
  });

  it("streams a server stream's messages, each reaching the client whole while the stream stays open", async () => {
    const request = join(work, "watch.txt");
    await writeFile(
      request,
      text(envelope(toBinary(HealthCheckRequestSchema, create(HealthCheckRequestSchema, { service: "" })))),
    );
    // Health/Watch stays open: its first message must arrive, decodable, before any end.
    const watcher = spawn("curl", [
      "-sS",
      "-N",
      "-H",
      "content-type: application/grpc-web-text",
      "--data-binary",
      `@${request}`,
      `${server.url}/grpc.health.v1.Health/Watch`,
    ]);
    try {
      let received = Buffer.alloc(0);
      const first = await new Promise<Buffer>((resolve, reject) => {
        watcher.once("error", reject);
        watcher.once("exit", (code) => reject(new Error(`curl ended (${code}) before a whole message`)));
        watcher.stdout.on("data", (chunk: Buffer) => {
          received = Buffer.concat([received, chunk]);
          if (received.length % 4 !== 0) return;
          const bytes = fromText(received);
          if (bytes.length >= 5 && bytes.length >= 5 + bytes.readUInt32BE(1)) resolve(frames(bytes)[0]!.data);
        });
      });
      expect(fromBinary(HealthCheckResponseSchema, first).status).toBe(
        HealthCheckResponse_ServingStatus.SERVING,
      );
      expect(watcher.exitCode).toBeNull();
    } finally {
      watcher.kill();
    }
  });
});

describe("buf curl without a schema", () => {
  const buf = join(repo, "node_modules", ".bin", "buf");

  it("lists every service and method through reflection, and calls one it described", async () => {
    for (const reflect of ["grpc-v1", "grpc-v1alpha"]) {
      const { stdout } = await run(buf, [
        "curl",
        "--http2-prior-knowledge",
        "--reflect-protocol",
        reflect,
        "--list-services",
        server.url,
      ]);
      expect(stdout.split("\n")).toEqual(
        expect.arrayContaining([
          "platform.v1.CertificateService",
          "platform.v1.UserService",
          "grpc.health.v1.Health",
        ]),
      );
    }
    const methods = await run(buf, ["curl", "--http2-prior-knowledge", "--list-methods", server.url]);
    expect(methods.stdout).toContain("platform.v1.CertificateService/SignSSHCertificate");
    expect(methods.stdout).toContain("grpc.health.v1.Health/Watch");
    const health = await run(buf, [
      "curl",
      "--http2-prior-knowledge",
      "-d",
      '{"service":""}',
      `${server.url}/grpc.health.v1.Health/Check`,
    ]);
    expect(JSON.parse(health.stdout)).toEqual({ status: "SERVING" });
    const whoami = await run(buf, [
      "curl",
      "--http2-prior-knowledge",
      "--protocol",
      "grpc",
      "-H",
      `authorization: Bearer ${account.accessToken}`,
      `${server.url}/platform.v1.UserService/Whoami`,
    ]);
    expect(JSON.parse(whoami.stdout).user.email).toBe(account.email);
  }, 60_000);
});
