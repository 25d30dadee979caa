/**
 * What the edge refuses of browsers and malformed bodies: REST bodies that are not JSON (415),
 * sign-in calls from other sites' pages (login CSRF), JSON that is not UTF-8 on every protocol
 * and path, and the `Secure` flag of the session cookie behind a TLS proxy.
 */
import http from "node:http";
import { connectCall, restCall, signUp } from "@wap/test-kit/http";
import { startTestServer, type TestServer } from "@wap/test-kit/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

let server: TestServer;
let user: Awaited<ReturnType<typeof signUp>>;

beforeAll(async () => {
  server = await startTestServer();
  user = await signUp(server.url, "hardening");
});
afterAll(async () => {
  await server?.close();
});

/** A raw HTTP/1.1 POST (bytes as given), answered as status, headers and body text. */
function post(
  url: string,
  path: string,
  body: Buffer,
  headers: Record<string, string>,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}${path}`, { method: "POST", headers }, (res) => {
      let text = "";
      res.setEncoding("latin1");
      res.on("data", (chunk: string) => {
        text += chunk;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

describe("REST bodies and sign-in from other sites", () => {
  it("refuses a body that is not application/json with 415, before reading it as JSON", async () => {
    const credentials = JSON.stringify({ email: user.email, password: user.password });
    for (const type of [
      "text/plain",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
    ]) {
      const refused = await restCall(server.url, "POST", "/v1/login", undefined, {
        rawBody: credentials,
        headers: { "content-type": type },
      });
      expect(refused.status, type).toBe(415);
      expect(refused.body.message).toMatch(/Content-Type: application\/json/);
      expect(refused.headers.get("set-cookie")).toBeNull();
    }
    const signedIn = await restCall(server.url, "POST", "/v1/login", undefined, {
      rawBody: credentials,
      headers: { "content-type": "application/json; charset=utf-8" },
    });
    expect(signedIn.status).toBe(200);
  });

  it("refuses sign-in from another site's page, by Origin or Sec-Fetch-Site, on REST and Connect", async () => {
    const credentials = { email: user.email, password: user.password };
    const foreign: Record<string, string>[] = [
      { origin: "https://evil.example" },
      { "sec-fetch-site": "cross-site" },
    ];
    for (const headers of foreign) {
      const rest = await restCall(server.url, "POST", "/v1/login", credentials, { headers });
      expect(rest.status).toBe(403);
      expect(rest.body.details[0].reason).toBe("CSRF_CHECK_FAILED");
      expect(rest.headers.get("set-cookie")).toBeNull();
      const connect = await connectCall(server.url, "platform.v1.AuthService/Login", credentials, {
        headers,
      });
      expect(connect.status).toBe(403);
      expect(connect.headers.get("set-cookie")).toBeNull();
    }
    // Our own page may.
    const own = await restCall(server.url, "POST", "/v1/login", credentials, {
      headers: { origin: server.url, "sec-fetch-site": "same-origin" },
    });
    expect(own.status).toBe(200);
  });
});

describe("JSON that is not UTF-8", () => {
  // A name with a lone 0xFF byte: not UTF-8.
  const badJson = Buffer.concat([
    Buffer.from('{"email":"'),
    Buffer.from([0xff]),
    Buffer.from('@x.example","password":"whatever"}'),
  ]);

  it("is invalid_argument on the lean unary path and on connect-node", async () => {
    const variants: Record<string, string>[] = [{}, { "connect-timeout-ms": "10000" }];
    for (const extra of variants) {
      const answer = await post(server.url, "/platform.v1.AuthService/Login", badJson, {
        "content-type": "application/json",
        ...extra,
      });
      expect(answer.status).toBe(400);
      expect(JSON.parse(answer.text)).toMatchObject({
        code: "invalid_argument",
        message: expect.stringMatching(/not valid UTF-8/),
      });
    }
  });

  it("is invalid_argument over gRPC-Web JSON and REST", async () => {
    const frame = Buffer.alloc(5);
    frame.writeUInt32BE(badJson.byteLength, 1);
    const grpcWeb = await post(
      server.url,
      "/platform.v1.AuthService/Login",
      Buffer.concat([frame, badJson]),
      {
        "content-type": "application/grpc-web+json",
      },
    );
    const status = grpcWeb.headers["grpc-status"] ?? /grpc-status:\s*(\d+)/.exec(grpcWeb.text)?.[1];
    expect(status).toBe("3");

    const rest = await post(server.url, "/v1/login", badJson, { "content-type": "application/json" });
    expect(rest.status).toBe(400);
    expect(JSON.parse(rest.text).message).toMatch(/not valid UTF-8/);
  });
});

describe("the Secure flag of the session cookie", () => {
  async function loginCookie(target: TestServer, headers: Record<string, string> = {}) {
    const member = await signUp(target.url, "secure");
    const login = await restCall(
      target.url,
      "POST",
      "/v1/login",
      { email: member.email, password: member.password },
      { headers },
    );
    expect(login.status).toBe(200);
    return login.headers.get("set-cookie") ?? "";
  }

  it("is set when the public URL is https, though the server speaks cleartext", async () => {
    const behindProxy = await startTestServer({ publicUrl: "https://wap.example.com" });
    try {
      expect(await loginCookie(behindProxy)).toMatch(
        /^session=[^,]+; HttpOnly; Secure; SameSite=Lax(, ?refresh=[^,]+; HttpOnly; Secure; SameSite=Strict)?$/,
      );
    } finally {
      await behindProxy.close();
    }
  });

  it("is set when a trusted proxy says the request was https, and only then", async () => {
    const trusting = await startTestServer({ trustProxyHops: 1 });
    try {
      expect(await loginCookie(trusting, { "x-forwarded-proto": "https" })).toMatch(
        /^session=[^,]+; HttpOnly; Secure; SameSite=Lax(, ?refresh=[^,]+; HttpOnly; Secure; SameSite=Strict)?$/,
      );
      expect(await loginCookie(trusting)).not.toContain("Secure");
    } finally {
      await trusting.close();
    }
    // An untrusted header changes nothing.
    expect(await loginCookie(server, { "x-forwarded-proto": "https" })).not.toContain("Secure");
  });
});
