/**
 * The CLI device login through the real server (docs/agent-protocol.md): StreamCLILogin
 * over HTTP/2, approval with VerifyCLILogin on another connection, then requests signed with the
 * device key (`Authorization: Platform ...`) over Connect and REST.
 */
import { generateKeyPairSync, type KeyObject, randomBytes, randomUUID, sign } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import { AuthService, UserService } from "@wap/api";
import { bearer, clientFor, transportFor } from "@wap/test-kit/clients";
import { connectCall, restCall, signUp } from "@wap/test-kit/http";
import { startTestServer, type TestServer } from "@wap/test-kit/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ platformOptions: { config: { publicBaseUrl: "https://wap.example" } } });
});
afterAll(() => server?.close());

const whoamiProcedure = "/platform.v1.UserService/Whoami";

/** A CLI device: its id, its P-256 key, and the challenges it signs (docs/agent-protocol.md). */
function createDevice() {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const id = randomUUID();
  return {
    id,
    publicKeyPem: publicKey.export({ type: "spki", format: "pem" }).toString(),
    /** `Platform <id>:<ts>:<nonce>:<procedure>:<DER signature, base64url>`. */
    challenge(procedure: string, key: KeyObject = privateKey): string {
      const nonce = randomBytes(12).toString("hex");
      const signed = `${id}:${Math.floor(Date.now() / 1000)}:${nonce}:${procedure}`;
      const signature = sign("sha256", Buffer.from(signed), { key, dsaEncoding: "der" });
      return `Platform ${signed}:${signature.toString("base64url")}`;
    },
  };
}

/** Opens StreamCLILogin the way the CLI does: binary Connect over HTTP/2, headers of §1.1. */
function openLogin(device: ReturnType<typeof createDevice>, signal?: AbortSignal) {
  const client = clientFor(AuthService, transportFor("connect-binary-h2", server.url));
  const stream = client.streamCLILogin(
    { authMethod: "soft", authPubkey: device.publicKeyPem },
    {
      headers: {
        "platform-client-device-id": device.id,
        "platform-client-hostname": "ada-laptop",
        "platform-client-os": "linux/x64",
        "platform-client-version": "0.9.1",
        // Signed by a key the server has never seen: must be ignored on this one RPC.
        authorization: device.challenge("/platform.v1.AuthService/StreamCLILogin"),
      },
      ...(signal && { signal }),
    },
  );
  return stream[Symbol.asyncIterator]();
}

async function approve(
  first: { verificationUrl: string; userCode: string },
  accessToken: string,
  options: { deny?: boolean } = {},
) {
  const code = new URL(first.verificationUrl).searchParams.get("code");
  expect(code).toMatch(/^[0-9a-f]{32}$/);
  expect(first.userCode).toMatch(/^[A-Z]{4}-[A-Z]{4}$/);
  // Another connection and protocol, as the web app would make it.
  const client = clientFor(AuthService, transportFor("connect-json-h1", server.url));
  await client.verifyCLILogin(
    { loginCode: code!, userCode: first.userCode, ...options },
    bearer(accessToken),
  );
}

async function connectCode(promise: Promise<unknown>): Promise<Code | undefined> {
  return promise.then(
    () => undefined,
    (error: unknown) => ConnectError.from(error).code,
  );
}

describe("StreamCLILogin and Platform-signed requests", () => {
  it("streams the URL, then the user after VerifyCLILogin; the device key then signs requests", async () => {
    const user = await signUp(server.url, "cli");
    const device = createDevice();
    const stream = openLogin(device);

    const first = await stream.next();
    expect(first.done).toBe(false);
    expect(first.value!.user).toBeUndefined();
    expect(first.value!.verificationUrl).toMatch(/^https:\/\/wap\.example\/cli-login\?code=/);

    await approve(first.value!, user.accessToken);
    const second = await stream.next();
    expect(second.value!.user).toMatchObject({ email: user.email, username: expect.any(String) });
    expect(second.value!.user!.id).toMatch(/^[0-9a-f-]{36}$/);
    expect((await stream.next()).done).toBe(true);

    // A correct challenge authenticates (binary Connect over HTTP/2, as the CLI calls).
    const users = clientFor(UserService, transportFor("connect-binary-h2", server.url));
    const header = device.challenge(whoamiProcedure);
    const whoami = await users.whoami({}, { headers: { authorization: header } });
    expect(whoami.user?.id).toBe(second.value!.user!.id);

    // The same challenge again, or one signed for another procedure: unauthenticated.
    expect(await connectCode(users.whoami({}, { headers: { authorization: header } }))).toBe(
      Code.Unauthenticated,
    );
    const elsewhere = device.challenge("/platform.v1.WorkspaceService/ListWorkspaces");
    expect(await connectCode(users.whoami({}, { headers: { authorization: elsewhere } }))).toBe(
      Code.Unauthenticated,
    );
    // Signed by another key for the registered id: unauthenticated.
    const stranger = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey;
    const forged = device.challenge(whoamiProcedure, stranger);
    expect(await connectCode(users.whoami({}, { headers: { authorization: forged } }))).toBe(
      Code.Unauthenticated,
    );

    // REST: the challenge signs the RPC's procedure path, not the REST path.
    const rest = await restCall(server.url, "GET", "/v1/whoami", undefined, {
      headers: { authorization: device.challenge(whoamiProcedure) },
    });
    expect(rest.status).toBe(200);
    expect(rest.body.user.id).toBe(second.value!.user!.id);
    const restWrong = await restCall(server.url, "GET", "/v1/whoami", undefined, {
      headers: { authorization: device.challenge("/v1/whoami") },
    });
    expect(restWrong.status).toBe(401);

    // Over the Connect JSON protocol on HTTP/1.1 too; and the device is listed as the user's.
    const devices = await connectCall(
      server.url,
      "platform.v1.UserService/ListUserDevices",
      {},
      {
        headers: { authorization: device.challenge("/platform.v1.UserService/ListUserDevices") },
      },
    );
    expect(devices.status).toBe(200);
    expect(devices.body.devices).toContainEqual(
      expect.objectContaining({ id: device.id, name: "ada-laptop", kind: "cli" }),
    );

    // The same device logs in again (its challenge on the stream is valid now, and
    // still ignored); the new binding works at once.
    const again = openLogin(device);
    await approve((await again.next()).value!, user.accessToken);
    expect((await again.next()).value!.user!.id).toBe(second.value!.user!.id);
    const after = await users.whoami({}, { headers: { authorization: device.challenge(whoamiProcedure) } });
    expect(after.user?.id).toBe(second.value!.user!.id);
  });

  it("the approval page sees the CLI's headers and address; deny ends the stream with permission_denied", async () => {
    const user = await signUp(server.url, "deny");
    const stream = openLogin(createDevice());
    const first = (await stream.next()).value!;
    const loginCode = new URL(first.verificationUrl).searchParams.get("code")!;
    const client = clientFor(AuthService, transportFor("connect-json-h1", server.url));
    const shown = await client.getCLILogin({ loginCode }, bearer(user.accessToken));
    expect(shown).toMatchObject({
      deviceName: "ada-laptop",
      os: "linux/x64",
      clientVersion: "0.9.1",
      clientAddress: "127.0.0.1",
    });
    await approve(first, user.accessToken, { deny: true });
    const ended = await stream.next().then(
      () => undefined,
      (error: unknown) => ConnectError.from(error),
    );
    expect(ended?.code).toBe(Code.PermissionDenied);
    expect(ended?.rawMessage).toBe("the CLI login was denied in the browser");
  });

  it("refuses a stream without a device id or key before any message", async () => {
    const client = clientFor(AuthService, transportFor("connect-json-h2", server.url));
    const code = await connectCode(
      (async () => {
        for await (const _ of client.streamCLILogin({ authMethod: "soft", authPubkey: "nope" })) {
          // no message is expected
        }
      })(),
    );
    expect(code).toBe(Code.InvalidArgument);
  });

  it("ends cleanly when the client leaves, and forgets the pending login", async () => {
    const device = createDevice();
    const controller = new AbortController();
    const stream = openLogin(device, controller.signal);
    const first = await stream.next();
    expect(first.value!.verificationUrl).toContain("code=");
    controller.abort();
    await stream.next().catch(() => undefined);

    // The server notices the reset, logs the stream as canceled and removes the pending login.
    const logged = await waitFor(() =>
      server.logs.find(
        (line) =>
          line.includes('"rpc":"/platform.v1.AuthService/StreamCLILogin"') &&
          line.includes('"code":"canceled"'),
      ),
    );
    expect(logged, server.logs.filter((l) => l.includes("StreamCLILogin")).join("\n")).toBeDefined();
    const user = await signUp(server.url, "late");
    const code = new URL(first.value!.verificationUrl).searchParams.get("code")!;
    const late = await connectCall(
      server.url,
      "platform.v1.AuthService/VerifyCLILogin",
      { loginCode: code, userCode: first.value!.userCode },
      {
        token: user.accessToken,
      },
    );
    expect(late.status).toBe(400);
    expect(server.logs.join("\n")).not.toContain(code);
  });
});

async function waitFor<T>(probe: () => T | undefined, timeoutMs = 5000): Promise<T | undefined> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined || Date.now() > end) return value;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
