import { generateKeyPairSync, type KeyObject, randomBytes, randomUUID, sign } from "node:crypto";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { AuthService, UserService } from "@wap/api";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { hashSecret } from "../src/auth/service-account-tokens.js";
import { createCallContext } from "../src/context.js";
import { authenticateDevice } from "../src/devices/challenge.js";
import { cliLoginStream, startCliLogin } from "../src/devices/cli-login.js";
import type { CliLoginRepository } from "../src/storage/devices.js";
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

/** Counts `findById` reads of pending logins (what a waiting stream does each time it looks). */
function countReads(repository: CliLoginRepository) {
  const original = repository.findById;
  const counter = {
    count: 0,
    restore: () => Object.assign(repository, { findById: original }),
  };
  Object.assign(repository, {
    findById: (id: string) => {
      counter.count++;
      return original.call(repository, id);
    },
  });
  return counter;
}

const asDevice = (value: string, procedure = whoamiPath) =>
  t.platform.authenticate({ platformChallenge: { value, procedure } });

type SignedUp = Awaited<ReturnType<AccountsPlatform["signUp"]>>;
type Pending = Awaited<ReturnType<typeof startCliLogin>>;

/** Opens a pending login as the CLI does, from `ipAddress`. */
function startLogin(
  device = aDevice(),
  options: { ipAddress?: string; signal?: AbortSignal; deviceName?: string } = {},
) {
  return startCliLogin(
    t.platform.services,
    createCallContext(anonymous, {
      ipAddress: options.ipAddress ?? "198.51.100.4",
      userAgent: "platform-cli/1.2",
      ...(options.signal && { signal: options.signal }),
    }),
    {
      authMethod: "soft",
      authPubkey: device.pem,
      deviceId: device.id,
      deviceName: options.deviceName ?? "ada-laptop",
      clientOs: "linux/x64",
      clientVersion: "1.2.3",
    },
  );
}

const loginCodeOf = (pending: Pick<Pending, "verificationUrl">) =>
  linkParam({ text: pending.verificationUrl }, "code");

/** VerifyCLILogin as the approval page calls it: the login code from the URL, the user code typed. */
const verify = (user: SignedUp, pending: Pending, extra: { userCode?: string; deny?: boolean } = {}) =>
  t.call(user.caller, AuthService.method.verifyCLILogin, {
    loginCode: loginCodeOf(pending),
    userCode: pending.userCode,
    ...extra,
  });

/** Runs the whole CLI login: stream opened, code approved by `approver`. */
async function cliLogin(approver: SignedUp, device = aDevice()) {
  const pending = await startLogin(device);
  const approval = pending.waitForApproval();
  await verify(approver, pending);
  return { device, user: await approval, pending };
}

describe("CLI login", () => {
  it("streams a verification URL and a user code at once, then the user after VerifyCLILogin", async () => {
    const ada = await t.signUp("ada");
    const device = aDevice();
    const stream = cliLoginStream(t.platform.services, createCallContext(anonymous), {
      authMethod: "tpm",
      authPubkey: device.pem,
      deviceId: device.id,
      loginCode: "ignored",
    });
    const first = await stream.next();
    expect(first.value).toEqual({
      verificationUrl: expect.stringMatching(/^https:\/\/app\.example\.test\/cli-login\?code=[0-9a-f]{32}$/),
      userCode: expect.stringMatching(/^[BCDFGHJKMNPQRSTVWXYZ]{4}-[BCDFGHJKMNPQRSTVWXYZ]{4}$/),
    });
    const second = stream.next();
    const { verificationUrl, userCode } = first.value as { verificationUrl: string; userCode: string };
    // Typed in lower case and without the hyphen, it still matches.
    await t.call(ada.caller, AuthService.method.verifyCLILogin, {
      loginCode: loginCodeOf({ verificationUrl }),
      userCode: userCode.toLowerCase().replace("-", ""),
    });
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

  it("GetCLILogin shows the approver what is asking; the user code is kept only as a hash", async () => {
    const ada = await t.signUp("ada");
    const pending = await startLogin();
    const shown = await t.call(ada.caller, AuthService.method.getCLILogin, {
      loginCode: loginCodeOf(pending),
    });
    expect(shown).toMatchObject({
      deviceName: "ada-laptop",
      os: "linux/x64",
      clientAddress: "198.51.100.4",
      clientVersion: "1.2.3",
    });
    expect(timestampDate(shown.createdAt!)).toEqual(t.clock.now());
    expect(timestampDate(shown.expiresAt!).getTime() - t.clock.now().getTime()).toBe(600_000);
    const stored = (await t.storage.cliLogins.findByCode(hashSecret(loginCodeOf(pending))))!;
    expect(JSON.stringify(stored)).not.toContain(pending.userCode.replace("-", ""));
    await expectCode(
      t.call(anonymous, AuthService.method.getCLILogin, { loginCode: loginCodeOf(pending) }),
      "unauthenticated",
    );
    await expectCode(
      t.call(ada.caller, AuthService.method.getCLILogin, { loginCode: "0".repeat(32) }),
      "invalid_argument",
    );
  });

  it("keeps no control character of the device's name, which the approval page and device lists show", async () => {
    const ada = await t.signUp("ada");
    const pending = await startLogin(aDevice(), { deviceName: "ada\u001b]0;owned\u0007-lap\ntop\u202e" });
    const shown = await t.call(ada.caller, AuthService.method.getCLILogin, {
      loginCode: loginCodeOf(pending),
    });
    expect(shown.deviceName).toBe("ada]0;owned-laptop");
  });

  it("VerifyCLILogin needs the user code; a few wrong ones cancel the login and end the stream", async () => {
    const ada = await t.signUp("ada");
    const pending = await startLogin();
    const waiting = pending.waitForApproval();
    const missing = await expectCode(
      t.call(ada.caller, AuthService.method.verifyCLILogin, { loginCode: loginCodeOf(pending) }),
      "invalid_argument",
    );
    expect(missing.violations.map((v) => v.field)).toEqual(["userCode"]);
    const wrong = pending.userCode.startsWith("B") ? "CCCC-CCCC" : "BBBB-BBBB";
    for (let i = 1; i <= 3; i++) {
      const error = await expectCode(verify(ada, pending, { userCode: wrong }), "invalid_argument");
      expect(error.reason).toBe(i < 3 ? "INVALID_USER_CODE" : "CLI_LOGIN_CANCELLED");
    }
    const ended = await expectCode(waiting, "permission_denied");
    expect(ended.message).toMatch(/cancelled: a wrong code was entered too often/);
    // Cancelled for good: the right code no longer works.
    await expectCode(verify(ada, pending), "invalid_argument");
    expect(await t.storage.userDevices.listByUser(ada.caller.userId)).toEqual([]);
  });

  it("an approval that lands while the waiting stream reads the login still wakes it", async () => {
    const ada = await t.signUp("ada");
    const pending = await startLogin();
    const repository = t.platform.services.storage.cliLogins;
    const original = repository.findById;
    let approved = false;
    Object.assign(repository, {
      // The first read sees the login still pending; the approval and its event land before the
      // stream goes back to waiting.
      findById: async (id: string) => {
        const record = await original.call(repository, id);
        if (!approved) {
          approved = true;
          await verify(ada, pending);
          await new Promise((resolve) => setImmediate(resolve));
        }
        return record;
      },
    });
    try {
      const user = await pending.waitForApproval();
      expect(user.email).toBe(ada.email);
    } finally {
      Object.assign(repository, { findById: original });
    }
  });

  it("deny refuses the login: the CLI's stream ends with permission_denied and nothing is bound", async () => {
    const ada = await t.signUp("ada");
    const device = aDevice();
    const pending = await startLogin(device);
    const waiting = pending.waitForApproval();
    await verify(ada, pending, { deny: true });
    const ended = await expectCode(waiting, "permission_denied");
    expect([ended.reason, ended.message]).toEqual([
      "CLI_LOGIN_DENIED",
      "the CLI login was denied in the browser",
    ]);
    expect(await t.storage.userDevices.findById(device.id)).toBeNull();
    await expectCode(verify(ada, pending), "invalid_argument");
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

  it("a device id bound to one user is never taken over by another; its own user may re-key it", async () => {
    const ada = await t.signUp("ada");
    const bob = await t.signUp("bob");
    const { device } = await cliLogin(ada);
    // Bob learned the id: his login with it is refused, and ends his CLI's stream.
    const stolen = aDevice(device.id);
    const pending = await startLogin(stolen);
    const waiting = pending.waitForApproval();
    const refused = await expectCode(verify(bob, pending), "permission_denied");
    expect(refused.reason).toBe("DEVICE_BOUND_TO_ANOTHER_USER");
    await expectCode(waiting, "permission_denied");
    // Ada's CLI is still signed in; Bob's key signs nothing.
    expect((await asDevice(challenge(device, whoamiPath))).caller).toMatchObject({
      userId: ada.caller.userId,
    });
    await expectCode(asDevice(challenge(stolen, whoamiPath)), "unauthenticated");
    // Ada logging the same id in again with a new key replaces it.
    const rekeyed = aDevice(device.id);
    await cliLogin(ada, rekeyed);
    await expectCode(asDevice(challenge(device, whoamiPath)), "unauthenticated");
    expect((await asDevice(challenge(rekeyed, whoamiPath))).caller).toMatchObject({
      userId: ada.caller.userId,
    });
    // Logged out locally with a TPM: new device id, same key.
    const sameKey = { ...rekeyed, id: randomUUID() };
    await cliLogin(bob, sameKey);
    expect((await asDevice(challenge(sameKey, whoamiPath))).caller).toMatchObject({
      userId: bob.caller.userId,
    });
    // Once Ada lets the id go, it is free.
    await t.call(ada.caller, UserService.method.deleteUserDevice, { id: device.id });
    await cliLogin(bob, aDevice(device.id));
  });

  it("VerifyCLILogin answers unknown, reused and expired codes alike", async () => {
    const ada = await t.signUp("ada");
    const { pending } = await cliLogin(ada);
    const messages = new Set<string>();
    const refuse = async (loginCode: string) =>
      messages.add(
        (
          await expectCode(
            t.call(ada.caller, AuthService.method.verifyCLILogin, { loginCode, userCode: pending.userCode }),
            "invalid_argument",
          )
        ).message,
      );
    await refuse(loginCodeOf(pending));
    await refuse("0".repeat(32));
    const late = await startLogin();
    t.clock.advance(10 * 60 * 1000);
    await refuse(loginCodeOf(late));
    expect(messages.size).toBe(1);
    await expectCode(late.waitForApproval(), "deadline_exceeded");
  });

  it("only a signed-in user may approve, and a code races to one approval", async () => {
    const ada = await t.signUp("ada");
    const bob = await t.signUp("bob");
    const pending = await startLogin();
    const loginCode = loginCodeOf(pending);
    await expectCode(
      t.call(anonymous, AuthService.method.verifyCLILogin, { loginCode, userCode: pending.userCode }),
      "unauthenticated",
    );
    const results = await Promise.allSettled([ada, bob, ada, bob].map((u) => verify(u, pending)));
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    await pending.waitForApproval();
  });

  it("the stream ends when the client goes away, and the pending login is gone", async () => {
    const controller = new AbortController();
    const pending = await startLogin(aDevice(), { signal: controller.signal });
    const waiting = pending.waitForApproval();
    controller.abort();
    await expectCode(waiting, "deadline_exceeded");
    const ada = await t.signUp("ada");
    await expectCode(verify(ada, pending), "invalid_argument");
  });

  it("waiting streams read storage only when woken, never on a timer", async () => {
    const ada = await t.signUp("ada");
    const pending = await startLogin();
    const reads = countReads(t.platform.services.storage.cliLogins);
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval"] });
    let approval: Promise<unknown>;
    try {
      approval = pending.waitForApproval();
      // Five minutes of timers: a polling stream would read storage again and again.
      await vi.advanceTimersByTimeAsync(5 * 60 * 1000);
    } finally {
      vi.useRealTimers();
    }
    const idle = reads.count;
    expect(idle).toBe(1);
    await verify(ada, pending);
    await approval;
    expect(reads.count).toBe(idle + 1);
    reads.restore();
  });

  it("at most cliLoginMaxPendingPerAddress logins wait per client address", async () => {
    const limited = await createAccountsPlatform({ cliLoginMaxPendingPerAddress: 2 });
    try {
      const start = (ipAddress: string) =>
        startCliLogin(limited.platform.services, createCallContext(anonymous, { ipAddress }), {
          authMethod: "soft",
          authPubkey: aDevice().pem,
          deviceId: randomUUID(),
        });
      await start("192.0.2.1");
      await start("192.0.2.1");
      const refused = await expectCode(start("192.0.2.1"), "resource_exhausted");
      expect(refused.message).toContain("at most 2 CLI logins");
      expect(refused.message).toContain("WAP_CLI_LOGIN_MAX_PENDING_PER_ADDRESS");
      // Another address is not affected.
      await start("192.0.2.2");
    } finally {
      await limited.platform.close();
    }
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
