import { AuthService, CredentialService, UserService } from "@wap/api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type AccountsPlatform, createAccountsPlatform, publicBaseUrl } from "./support/accounts.js";
import { createSoftwareAuthenticator } from "./support/authenticator.js";
import { expectCode } from "./support.js";

const anonymous = { kind: "anonymous" } as const;
let t: AccountsPlatform;
beforeEach(async () => {
  t = await createAccountsPlatform();
});
afterEach(() => t.platform.close());

/** Registers a passkey for `caller` with `authenticator`; returns the stored passkey message. */
async function register(
  caller: Awaited<ReturnType<AccountsPlatform["signUp"]>>["caller"],
  authenticator: ReturnType<typeof createSoftwareAuthenticator>,
  name?: string,
) {
  const { optionsJson } = await t.call(caller, CredentialService.method.beginPasskeyRegistration, {});
  const credentialJson = authenticator.create(optionsJson);
  const { passkey } = await t.call(caller, CredentialService.method.finishPasskeyRegistration, {
    credentialJson,
    ...(name === undefined ? {} : { name }),
  });
  return passkey!;
}

describe("passkey registration", () => {
  it("offers creation options bound to the public base URL and the user", async () => {
    const { caller } = await t.signUp("ada");
    const { optionsJson } = await t.call(caller, CredentialService.method.beginPasskeyRegistration, {});
    const options = JSON.parse(optionsJson);
    expect(options.rp).toEqual({ id: "app.example.test", name: "Workspace Access Platform" });
    expect(options.user).toMatchObject({ name: "ada@example.com", displayName: "ada Test" });
    expect(Buffer.from(options.user.id, "base64url").toString()).toBe(caller.userId);
    expect(options.authenticatorSelection).toMatchObject({
      residentKey: "required",
      userVerification: "required",
    });
    expect(options.challenge).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(options.pubKeyCredParams.map((p: { alg: number }) => p.alg)).toContain(-7);
  });

  it("stores a passkey that the user can list, rename and delete", async () => {
    const { caller } = await t.signUp("ada");
    const key = createSoftwareAuthenticator({ origin: publicBaseUrl });
    const passkey = await register(caller, key, "Laptop");
    expect(passkey).toMatchObject({ name: "Laptop" });
    expect(passkey.id).toBe(Buffer.from(key.credentials[0]!.id).toString("base64url"));
    expect(passkey.lastUsedAt).toBeUndefined();

    t.clock.advance(1000);
    const second = await register(caller, createSoftwareAuthenticator({ origin: publicBaseUrl }));
    expect(second.name).toBe("Passkey");
    const listed = await t.call(caller, CredentialService.method.listPasskeys, {});
    expect(listed.passkeys.map((p) => p.id)).toEqual([passkey.id, second.id]);

    const renamed = await t.call(caller, CredentialService.method.updatePasskey, {
      id: passkey.id,
      name: "Work laptop 💻",
    });
    expect(renamed.passkey?.name).toBe("Work laptop 💻");
    // An omitted name leaves it as it is.
    const same = await t.call(caller, CredentialService.method.updatePasskey, { id: passkey.id });
    expect(same.passkey?.name).toBe("Work laptop 💻");

    await t.call(caller, CredentialService.method.deletePasskey, { id: second.id });
    const after = await t.call(caller, CredentialService.method.listPasskeys, {});
    expect(after.passkeys.map((p) => p.id)).toEqual([passkey.id]);
  });

  it("excludes the user's existing passkeys from new registrations", async () => {
    const { caller } = await t.signUp("ada");
    const passkey = await register(caller, createSoftwareAuthenticator({ origin: publicBaseUrl }));
    const { optionsJson } = await t.call(caller, CredentialService.method.beginPasskeyRegistration, {});
    expect(JSON.parse(optionsJson).excludeCredentials).toEqual([
      expect.objectContaining({ id: passkey.id, type: "public-key" }),
    ]);
  });

  it("refuses a reused, expired, foreign or forged response with the same invalid_argument", async () => {
    const ada = await t.signUp("ada");
    const bob = await t.signUp("bob");
    const key = createSoftwareAuthenticator({ origin: publicBaseUrl });
    const finish = (caller: typeof ada.caller, credentialJson: string) =>
      expectCode(
        t.call(caller, CredentialService.method.finishPasskeyRegistration, { credentialJson }),
        "invalid_argument",
      );
    const begin = async () =>
      (await t.call(ada.caller, CredentialService.method.beginPasskeyRegistration, {})).optionsJson;

    // Reused: the challenge works once.
    const options = await begin();
    const response = key.create(options);
    await t.call(ada.caller, CredentialService.method.finishPasskeyRegistration, {
      credentialJson: response,
    });
    const reused = await finish(ada.caller, key.create(options));

    // Someone else's challenge.
    const foreign = await finish(bob.caller, key.create(await begin()));
    // Expired.
    const late = await begin();
    t.clock.advance(5 * 60 * 1000 + 1);
    const expired = await finish(ada.caller, key.create(late));
    // Wrong origin (a phishing site relaying the ceremony).
    const phished = await finish(ada.caller, key.create(await begin(), { origin: "https://evil.example" }));
    // A challenge we never issued.
    const forged = await finish(ada.caller, key.create(await begin(), { challenge: "A".repeat(43) }));
    // No user verification.
    const lazy = createSoftwareAuthenticator({ origin: publicBaseUrl, userVerified: false });
    const unverified = await finish(ada.caller, lazy.create(await begin()));
    // Not even JSON.
    const garbage = await finish(ada.caller, "{not json");

    const messages = new Set(
      [reused, foreign, expired, phished, forged, unverified, garbage].map((e) => e.message),
    );
    expect(messages.size).toBe(1);
    const listed = await t.call(ada.caller, CredentialService.method.listPasskeys, {});
    expect(listed.passkeys).toHaveLength(1);
  });

  it("another user's passkey is not found for rename and delete", async () => {
    const ada = await t.signUp("ada");
    const bob = await t.signUp("bob");
    const passkey = await register(ada.caller, createSoftwareAuthenticator({ origin: publicBaseUrl }));
    await expectCode(
      t.call(bob.caller, CredentialService.method.updatePasskey, { id: passkey.id, name: "mine" }),
      "not_found",
    );
    await expectCode(
      t.call(bob.caller, CredentialService.method.updatePasskey, { id: passkey.id }),
      "not_found",
    );
    await expectCode(
      t.call(bob.caller, CredentialService.method.deletePasskey, { id: passkey.id }),
      "not_found",
    );
    await expectCode(t.call(ada.caller, CredentialService.method.deletePasskey, { id: "nope" }), "not_found");
  });
});

describe("passkey sign-in", () => {
  it("signs in with a discoverable passkey and records its use", async () => {
    const { caller } = await t.signUp("ada");
    const key = createSoftwareAuthenticator({ origin: publicBaseUrl });
    const passkey = await register(caller, key);
    const { optionsJson } = await t.call(anonymous, AuthService.method.beginPasskeyLogin, {});
    const options = JSON.parse(optionsJson);
    expect(options).toMatchObject({ rpId: "app.example.test", userVerification: "required" });
    expect(options.allowCredentials ?? []).toEqual([]);

    t.clock.advance(1000);
    const tokens = await t.call(anonymous, AuthService.method.finishPasskeyLogin, {
      credentialJson: key.get(optionsJson),
    });
    const { caller: signedIn } = await t.platform.authenticate({ bearer: tokens.accessToken });
    const { user } = await t.call(signedIn, UserService.method.whoami, {});
    expect(user?.id).toBe(caller.userId);
    expect(tokens.refreshToken).toMatch(/^wapr_/);

    const listed = await t.call(caller, CredentialService.method.listPasskeys, {});
    expect(listed.passkeys[0]?.lastUsedAt).toBeDefined();
    expect((await t.storage.passkeys.findById(passkey.id))?.counter).toBe(1);
  });

  it("refuses a replayed, expired, unknown, impersonating or unverified assertion alike", async () => {
    const ada = await t.signUp("ada");
    const bob = await t.signUp("bob");
    const key = createSoftwareAuthenticator({ origin: publicBaseUrl });
    await register(ada.caller, key);
    const begin = async () => (await t.call(anonymous, AuthService.method.beginPasskeyLogin, {})).optionsJson;
    const finish = (credentialJson: string) =>
      expectCode(
        t.call(anonymous, AuthService.method.finishPasskeyLogin, { credentialJson }),
        "unauthenticated",
      );

    const options = await begin();
    const assertion = key.get(options);
    await t.call(anonymous, AuthService.method.finishPasskeyLogin, { credentialJson: assertion });
    const replayed = await finish(assertion);

    const late = await begin();
    t.clock.advance(5 * 60 * 1000 + 1);
    const expired = await finish(key.get(late));

    const stranger = createSoftwareAuthenticator({ origin: publicBaseUrl });
    stranger.create(
      (await t.call(bob.caller, CredentialService.method.beginPasskeyRegistration, {})).optionsJson,
    );
    // Bob's authenticator holds a key this server never registered.
    const unknown = await finish(stranger.get(await begin()));
    // Ada's passkey claiming to be Bob.
    const impersonating = await finish(
      key.get(await begin(), { userHandle: Buffer.from(bob.caller.userId) }),
    );
    const phished = await finish(key.get(await begin(), { origin: "https://evil.example" }));
    const garbage = await finish("[]");

    const messages = new Set(
      [replayed, expired, unknown, impersonating, phished, garbage].map((e) => e.message),
    );
    expect(messages.size).toBe(1);
  });

  it("a challenge is consumed once even when the same assertion races", async () => {
    const { caller } = await t.signUp("ada");
    const key = createSoftwareAuthenticator({ origin: publicBaseUrl });
    await register(caller, key);
    const { optionsJson } = await t.call(anonymous, AuthService.method.beginPasskeyLogin, {});
    const credentialJson = key.get(optionsJson);
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, () =>
        t.call(anonymous, AuthService.method.finishPasskeyLogin, { credentialJson }),
      ),
    );
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
  });
});

describe("keeping a way to sign in", () => {
  it("refuses to delete the last passkey of an account without a password", async () => {
    const { caller } = await t.signUp("ada");
    const passkey = await register(caller, createSoftwareAuthenticator({ origin: publicBaseUrl }));
    await t.call(caller, CredentialService.method.deletePassword, {
      currentPassword: "correct horse battery",
    });
    const error = await expectCode(
      t.call(caller, CredentialService.method.deletePasskey, { id: passkey.id }),
      "failed_precondition",
    );
    expect(error.reason).toBe("LAST_SIGN_IN_METHOD");
    // With a second passkey it may go.
    await register(caller, createSoftwareAuthenticator({ origin: publicBaseUrl }));
    await t.call(caller, CredentialService.method.deletePasskey, { id: passkey.id });
  });
});
