import { generateKeyPairSync, type KeyObject, randomBytes, randomUUID, sign } from "node:crypto";
import { AuthService, UserService } from "@wap/api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createCallContext } from "../src/context.js";
import { authenticateDevice } from "../src/devices/challenge.js";
import { cliLoginStream, startCliLogin } from "../src/devices/cli-login.js";
import { createInProcessEventBus, type EventBus } from "../src/events/event-bus.js";
import {
  type AccountsPlatform,
  createAccountsPlatform,
  linkParam,
  publicBaseUrl,
} from "./support/accounts.js";
import { expectCode } from "./support.js";

const anonymous = { kind: "anonymous" } as const;
const whoamiPath = "/platform.v1.UserService/Whoami";
let t: AccountsPlatform;
beforeEach(async () => {
  t = await createAccountsPlatform();
});
afterEach(() => t.platform.close());

/** A CLI: a device id and a P-256 key, signing challenges as the real one does. */
function aDevice(id = randomUUID()) {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const pem = publicKey.export({ type: "spki", format: "pem" }).toString();
  return { id, privateKey, pem };
}

function challenge(
  device: { id: string; privateKey: KeyObject },
  procedure: string,
  options: { at?: Date; nonce?: string } = {},
): string {
  const seconds = Math.floor((options.at ?? t.clock.now()).getTime() / 1000);
  const nonce = options.nonce ?? randomBytes(12).toString("hex");
  const signed = `${device.id}:${seconds}:${nonce}:${procedure}`;
  const signature = sign("sha256", Buffer.from(signed), { key: device.privateKey, dsaEncoding: "der" });
  return `${signed}:${signature.toString("base64url")}`;
}

const asDevice = (value: string, procedure = whoamiPath) =>
  t.platform.authenticate({ platformChallenge: { value, procedure } });

/** Runs the whole CLI login: stream opened, code approved by `approver`. */
async function cliLogin(approver: Awaited<ReturnType<AccountsPlatform["signUp"]>>, device = aDevice()) {
  const pending = await startCliLogin(
    t.platform.services,
    createCallContext(anonymous, { ipAddress: "198.51.100.4", userAgent: "platform-cli/1.2" }),
    { authMethod: "soft", authPubkey: device.pem, deviceId: device.id, deviceName: "ada-laptop" },
    { pollIntervalMs: 5 },
  );
  const approval = pending.waitForApproval();
  const code = linkParam({ text: pending.verificationUrl }, "code");
  await t.call(approver.caller, AuthService.method.verifyCLILogin, { loginCode: code });
  return { device, user: await approval, pending };
}

describe("CLI login", () => {
  it("streams a verification URL at once, then the user after VerifyCLILogin", async () => {
    const ada = await t.signUp("ada");
    const device = aDevice();
    const stream = cliLoginStream(
      t.platform.services,
      createCallContext(anonymous),
      { authMethod: "tpm", authPubkey: device.pem, deviceId: device.id, loginCode: "ignored" },
      { pollIntervalMs: 5 },
    );
    const first = await stream.next();
    expect(first.value).toEqual({
      verificationUrl: expect.stringMatching(/^https:\/\/app\.example\.test\/cli-login\?code=[0-9a-f]{32}$/),
    });
    const second = stream.next();
    const code = new URL((first.value as { verificationUrl: string }).verificationUrl).searchParams.get(
      "code",
    )!;
    await t.call(ada.caller, AuthService.method.verifyCLILogin, { loginCode: code });
    const { value } = await second;
    expect((value as { user: object }).user).toMatchObject({
      id: ada.caller.userId,
      username: "ada",
      email: ada.email,
      name: "ada Test",
    });
    expect((await stream.next()).done).toBe(true);
    // The binding was stored before the user was sent.
    const stored = await t.storage.userDevices.findById(device.id);
    expect(stored).toMatchObject({
      userId: ada.caller.userId,
      authMethod: "tpm",
      name: "cli",
      publicKey: device.pem,
    });
  });

  it("a device then signs requests that authenticate as the user", async () => {
    const ada = await t.signUp("ada");
    const { device } = await cliLogin(ada);
    const { caller, source } = await asDevice(challenge(device, whoamiPath));
    expect(source).toBe("device");
    expect(caller).toMatchObject({ kind: "user", userId: ada.caller.userId });
    const { user } = await t.call(caller, UserService.method.whoami, {});
    expect(user?.id).toBe(ada.caller.userId);
    expect((await t.storage.userDevices.findById(device.id))?.lastUsedAt).toEqual(t.clock.now());
  });

  it("refuses replayed, stale, future, misdirected, unknown and forged challenges alike", async () => {
    const ada = await t.signUp("ada");
    const { device } = await cliLogin(ada);
    const fresh = challenge(device, whoamiPath);
    await asDevice(fresh);
    const refused: string[] = [];
    const refuse = async (value: string, procedure = whoamiPath) =>
      refused.push((await expectCode(asDevice(value, procedure), "unauthenticated")).message);

    await refuse(fresh); // replayed
    await refuse(challenge(device, whoamiPath), "/platform.v1.WorkspaceService/ListWorkspaces"); // signed for another
    await refuse(challenge(device, whoamiPath, { at: new Date(t.clock.now().getTime() - 301_000) })); // stale
    await refuse(challenge(device, whoamiPath, { at: new Date(t.clock.now().getTime() + 301_000) })); // from the future
    await refuse(challenge(aDevice(), whoamiPath)); // unknown device
    await refuse(challenge({ id: device.id, privateKey: aDevice().privateKey }, whoamiPath)); // wrong key
    const parts = challenge(device, whoamiPath).split(":");
    await refuse([...parts.slice(0, 2), "f".repeat(24), ...parts.slice(3)].join(":")); // nonce changed after signing
    await refuse(`${parts.slice(0, 4).join(":")}:${parts[4]}=`); // padded
    await refuse("garbage");
    await refuse(`${parts.slice(0, 4).join(":")}`);
    expect(new Set(refused).size).toBe(1);
    // Just inside the window either way is fine.
    await asDevice(challenge(device, whoamiPath, { at: new Date(t.clock.now().getTime() - 299_000) }));
    await asDevice(challenge(device, whoamiPath, { at: new Date(t.clock.now().getTime() + 299_000) }));
  });

  it("a nonce replayed concurrently authenticates once", async () => {
    const ada = await t.signUp("ada");
    const { device } = await cliLogin(ada);
    const value = challenge(device, whoamiPath);
    const results = await Promise.allSettled(Array.from({ length: 10 }, () => asDevice(value)));
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
  });

  it("a new login of the same device id replaces its key; a known key may come with a new id", async () => {
    const ada = await t.signUp("ada");
    const bob = await t.signUp("bob");
    const { device } = await cliLogin(ada);
    const rekeyed = aDevice(device.id);
    await cliLogin(bob, rekeyed);
    await expectCode(asDevice(challenge(device, whoamiPath)), "unauthenticated");
    const { caller } = await asDevice(challenge(rekeyed, whoamiPath));
    expect(caller).toMatchObject({ userId: bob.caller.userId });
    // Logged out locally with a TPM: new device id, same key.
    const sameKey = { ...rekeyed, id: randomUUID() };
    await cliLogin(bob, sameKey);
    expect((await asDevice(challenge(sameKey, whoamiPath))).caller).toMatchObject({
      userId: bob.caller.userId,
    });
  });

  it("VerifyCLILogin answers unknown, reused and expired codes alike", async () => {
    const ada = await t.signUp("ada");
    const { pending } = await cliLogin(ada);
    const used = linkParam({ text: pending.verificationUrl }, "code");
    const messages = new Set<string>();
    const refuse = async (loginCode: string) =>
      messages.add(
        (
          await expectCode(
            t.call(ada.caller, AuthService.method.verifyCLILogin, { loginCode }),
            "invalid_argument",
          )
        ).message,
      );
    await refuse(used);
    await refuse("0".repeat(32));
    const late = await startCliLogin(
      t.platform.services,
      createCallContext(anonymous),
      { authMethod: "soft", authPubkey: aDevice().pem, deviceId: randomUUID() },
      { pollIntervalMs: 5 },
    );
    t.clock.advance(10 * 60 * 1000);
    await refuse(linkParam({ text: late.verificationUrl }, "code"));
    expect(messages.size).toBe(1);
    await expectCode(late.waitForApproval(), "deadline_exceeded");
  });

  it("only a signed-in user may approve, and a code races to one approval", async () => {
    const ada = await t.signUp("ada");
    const bob = await t.signUp("bob");
    const pending = await startCliLogin(
      t.platform.services,
      createCallContext(anonymous),
      { authMethod: "soft", authPubkey: aDevice().pem, deviceId: randomUUID() },
      { pollIntervalMs: 5 },
    );
    const loginCode = linkParam({ text: pending.verificationUrl }, "code");
    await expectCode(t.call(anonymous, AuthService.method.verifyCLILogin, { loginCode }), "unauthenticated");
    const results = await Promise.allSettled(
      [ada, bob, ada, bob].map((u) => t.call(u.caller, AuthService.method.verifyCLILogin, { loginCode })),
    );
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    await pending.waitForApproval();
  });

  it("the stream ends when the client goes away, and the pending login is gone", async () => {
    const controller = new AbortController();
    const pending = await startCliLogin(
      t.platform.services,
      createCallContext(anonymous, { signal: controller.signal }),
      { authMethod: "soft", authPubkey: aDevice().pem, deviceId: randomUUID() },
      { pollIntervalMs: 60_000 },
    );
    const waiting = pending.waitForApproval();
    controller.abort();
    await expectCode(waiting, "deadline_exceeded");
    const ada = await t.signUp("ada");
    await expectCode(
      t.call(ada.caller, AuthService.method.verifyCLILogin, {
        loginCode: linkParam({ text: pending.verificationUrl }, "code"),
      }),
      "invalid_argument",
    );
  });

  it("approval on the event bus wakes the stream without waiting for the next poll", async () => {
    const services = t.platform.services as typeof t.platform.services & { events?: EventBus };
    if (services.events === undefined) Object.assign(services, { events: createInProcessEventBus() });
    const ada = await t.signUp("ada");
    const device = aDevice();
    const pending = await startCliLogin(
      t.platform.services,
      createCallContext(anonymous),
      { authMethod: "soft", authPubkey: device.pem, deviceId: device.id },
      { pollIntervalMs: 60_000 },
    );
    const approval = pending.waitForApproval();
    await new Promise((resolve) => setTimeout(resolve, 20)); // the first poll has run; now it sleeps
    const started = Date.now();
    await t.call(ada.caller, AuthService.method.verifyCLILogin, {
      loginCode: linkParam({ text: pending.verificationUrl }, "code"),
    });
    await approval;
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("rejects a bad method, key or device id with invalid_argument", async () => {
    const good = { authMethod: "soft", authPubkey: aDevice().pem, deviceId: randomUUID() };
    const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 }).publicKey.export({
      type: "spki",
      format: "pem",
    });
    const p384 = generateKeyPairSync("ec", { namedCurve: "P-384" }).publicKey.export({
      type: "spki",
      format: "pem",
    });
    const cases: Array<[Record<string, string | undefined>, string]> = [
      [{ ...good, authMethod: "password" }, "authMethod"],
      [{ ...good, authMethod: undefined }, "authMethod"],
      [{ ...good, authPubkey: rsa.toString() }, "authPubkey"],
      [{ ...good, authPubkey: p384.toString() }, "authPubkey"],
      [{ ...good, authPubkey: "-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----\n" }, "authPubkey"],
      [{ ...good, deviceId: "not-a-uuid" }, "deviceId"],
      [{ ...good, deviceId: undefined }, "deviceId"],
    ];
    for (const [request, field] of cases) {
      const error = await expectCode(
        startCliLogin(t.platform.services, createCallContext(anonymous), request),
        "invalid_argument",
      );
      expect(error.violations.map((v) => v.field)).toEqual([field]);
    }
  });
});

describe("ListUserDevices and DeleteUserDevice", () => {
  it("lists CLI devices and web sessions; deleting either signs it out", async () => {
    const ada = await t.signUp("ada");
    const { device } = await cliLogin(ada);
    const { devices } = await t.call(ada.caller, UserService.method.listUserDevices, {});
    expect(devices.map((d) => [d.kind, d.id])).toEqual([
      ["cli", device.id],
      ["web", ada.caller.sessionId],
    ]);
    expect(devices[0]).toMatchObject({ name: "ada-laptop" });
    expect(devices[0]?.expiresAt).toBeDefined();

    await t.call(ada.caller, UserService.method.deleteUserDevice, { id: device.id });
    await expectCode(asDevice(challenge(device, whoamiPath)), "unauthenticated");
    const web = await t.call(anonymous, AuthService.method.login, {
      email: ada.email,
      password: "correct horse battery",
    });
    const { caller: second } = await t.platform.authenticate({ bearer: web.accessToken });
    await t.call(ada.caller, UserService.method.deleteUserDevice, {
      id: second.kind === "user" ? second.sessionId : "",
    });
    await expectCode(t.platform.authenticate({ bearer: web.accessToken }), "unauthenticated");
    const after = await t.call(ada.caller, UserService.method.listUserDevices, {});
    expect(after.devices.map((d) => d.id)).toEqual([ada.caller.sessionId]);
  });

  it("another user's device or session is not found", async () => {
    const ada = await t.signUp("ada");
    const bob = await t.signUp("bob");
    const { device } = await cliLogin(ada);
    await expectCode(t.call(bob.caller, UserService.method.deleteUserDevice, { id: device.id }), "not_found");
    await expectCode(
      t.call(bob.caller, UserService.method.deleteUserDevice, { id: ada.caller.sessionId }),
      "not_found",
    );
    await expectCode(
      t.call(bob.caller, UserService.method.deleteUserDevice, { id: randomUUID() }),
      "not_found",
    );
    await asDevice(challenge(device, whoamiPath));
  });

  it("a password reset signs CLI devices out too", async () => {
    const ada = await t.signUp("ada");
    await t.mail.next(ada.email);
    const { device } = await cliLogin(ada);
    await t.call(anonymous, AuthService.method.forgotPassword, { email: ada.email });
    const token = linkParam(await t.mail.next(ada.email), "token");
    await t.call(anonymous, AuthService.method.resetPassword, { token, newPassword: "fresh password" });
    await expectCode(asDevice(challenge(device, whoamiPath)), "unauthenticated");
    expect((await t.storage.userDevices.listByUser(ada.caller.userId)).length).toBe(1);
    const signedIn = await t.call(anonymous, AuthService.method.login, {
      email: ada.email,
      password: "fresh password",
    });
    const { caller } = await t.platform.authenticate({ bearer: signedIn.accessToken });
    const { devices } = await t.call(caller, UserService.method.listUserDevices, {});
    expect(devices.map((d) => d.kind)).toEqual(["web"]);
  });

  it("direct use: authenticateDevice is what the server calls for `Authorization: Platform`", async () => {
    const ada = await t.signUp("ada");
    const { device } = await cliLogin(ada);
    const caller = await authenticateDevice(t.platform.services, {
      challenge: challenge(device, whoamiPath),
      procedure: whoamiPath,
    });
    expect(caller.userId).toBe(ada.caller.userId);
    expect(publicBaseUrl).toContain("https://");
  });
});
