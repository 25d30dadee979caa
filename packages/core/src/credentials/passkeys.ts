/**
 * Passkeys (WebAuthn): ListPasskeys, UpdatePasskey, DeletePasskey and the registration ceremony
 * BeginPasskeyRegistration/FinishPasskeyRegistration (CredentialService); signing in with
 * BeginPasskeyLogin/FinishPasskeyLogin (AuthService). See docs/passkeys.md.
 *
 * Challenges are one-time tokens: stored as hashes, single use, expiring, and a registration
 * challenge is bound to the user who asked for it. Sign-in uses discoverable credentials only, so
 * starting it needs no email and reveals nothing about accounts. User verification is required.
 *
 * @module
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { AuthService, CredentialService, type PasskeySchema } from "@wap/api";
import * as z from "zod";
import { recordSecurityEvent } from "../audit/security-events.js";
import { accountConfig } from "../auth/account-config.js";
import { auditAccount } from "../auth/audit.js";
import { callerUser } from "../auth/caller-user.js";
import { assertAddressVerified } from "../auth/mailbox-proof.js";
import { consumeOneTimeToken, issueOneTimeToken } from "../auth/one-time-tokens.js";
import { startSession } from "../auth/sessions.js";
import {
  AlreadyExistsError,
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  UnauthenticatedError,
} from "../errors.js";
import { encodeBase64Url } from "../lib/base64.js";
import { utf8 } from "../lib/bytes.js";
import { defineOperation } from "../operations/operation.js";
import type { PasskeyRecord } from "../storage/passkeys.js";
import { UniqueViolationError } from "../storage/storage.js";
import { passkeyName } from "../validation/bounds.js";
import { text } from "../validation/rules.js";
import { signInMethods } from "./sign-in-methods.js";
import {
  maxCredentialJsonLength,
  owned,
  readAuthentication,
  readRegistration,
  relyingParty,
  webauthn,
} from "./webauthn.js";

export function toPasskeyMessage(passkey: PasskeyRecord): MessageInitShape<typeof PasskeySchema> {
  return {
    id: passkey.id,
    name: passkey.name,
    createdAt: timestampFromDate(passkey.createdAt),
    ...(passkey.lastUsedAt === null ? {} : { lastUsedAt: timestampFromDate(passkey.lastUsedAt) }),
  };
}

const notFound = (id: string) => new NotFoundError(`passkey ${id} not found`);
const credentialJson = text({ min: 1, max: maxCredentialJsonLength, controlCharacters: "allowed" });
/** WebAuthn user handles are the user id's bytes: stable, and no personal data. */
const userHandle = (userId: string) => utf8(userId);

export const listPasskeys = defineOperation({
  method: CredentialService.method.listPasskeys,
  access: { kind: "caller", callers: ["user"] },
  input: z.object({}),
  async run({ services, ctx }) {
    const user = await callerUser(services, ctx);
    const passkeys = await services.storage.passkeys.listByUser(user.id);
    return { passkeys: passkeys.map(toPasskeyMessage) };
  },
});

export const updatePasskey = defineOperation({
  method: CredentialService.method.updatePasskey,
  access: { kind: "caller", callers: ["user"] },
  input: z.object({ id: text({ min: 1 }), name: passkeyName.optional() }),
  async run({ input, services, ctx, now }) {
    const user = await callerUser(services, ctx);
    const { name } = input;
    const passkey =
      name === undefined
        ? await services.storage.passkeys.findById(input.id)
        : await services.storage.transaction(async (tx) => {
            const renamed = await tx.passkeys.rename(user.id, input.id, name);
            if (renamed?.userId === user.id) {
              await auditAccount(tx, services, ctx, {
                userId: user.id,
                action: "user.passkey.update",
                resource: `passkey:${input.id}`,
                at: now,
              });
            }
            return renamed;
          });
    // Another user's passkey is "not found" too.
    if (!passkey || passkey.userId !== user.id) throw notFound(input.id);
    return { passkey: toPasskeyMessage(passkey) };
  },
});

export const deletePasskey = defineOperation({
  method: CredentialService.method.deletePasskey,
  access: { kind: "caller", callers: ["user"] },
  input: z.object({ id: text({ min: 1 }) }),
  async run({ input, services, ctx, now }) {
    const { id } = input;
    const user = await callerUser(services, ctx);
    await services.storage.transaction(async (tx) => {
      const passkey = await tx.passkeys.findById(id);
      if (!passkey || passkey.userId !== user.id) throw notFound(id);
      const methods = await signInMethods(tx, user);
      if (!methods.password && methods.passkeys + methods.linkedAccounts <= 1) {
        throw new FailedPreconditionError(
          "this passkey is the account's only way to sign in: set a password or add another passkey first",
          { reason: "LAST_SIGN_IN_METHOD" },
        );
      }
      await tx.passkeys.delete(user.id, id);
      await auditAccount(tx, services, ctx, {
        userId: user.id,
        action: "user.passkey.delete",
        resource: `passkey:${id}`,
        at: now,
      });
    });
    return {};
  },
});

export const beginPasskeyRegistration = defineOperation({
  method: CredentialService.method.beginPasskeyRegistration,
  access: { kind: "caller", callers: ["user"] },
  input: z.object({}),
  async run({ services, ctx, now }) {
    const user = await callerUser(services, ctx);
    assertAddressVerified(user, "a passkey");
    const config = accountConfig(services);
    const rp = relyingParty(config);
    const existing = await services.storage.passkeys.listByUser(user.id);
    const options = await (await webauthn()).generateRegistrationOptions({
      rpName: rp.name,
      rpID: rp.id,
      userName: user.email,
      userDisplayName: user.name,
      userID: owned(userHandle(user.id)),
      challenge: owned(services.random.bytes(32)),
      timeout: config.passkeyChallengeTtlSeconds * 1000,
      attestationType: "none",
      excludeCredentials: existing.map((p) => ({ id: p.id, transports: [...p.transports] })),
      // Discoverable (so sign-in needs no email) and verified (PIN or biometrics): a passkey alone
      // signs in, so it must be two factors in one.
      authenticatorSelection: { residentKey: "required", userVerification: "required" },
    });
    await services.storage.transaction(async (tx) => {
      await tx.oneTimeTokens.deleteExpired("passkey_registration", now);
      await issueOneTimeToken(tx, services, {
        purpose: "passkey_registration",
        userId: user.id,
        ttlSeconds: config.passkeyChallengeTtlSeconds,
        now,
        token: options.challenge,
      });
    });
    return { optionsJson: JSON.stringify(options) };
  },
});

export const finishPasskeyRegistration = defineOperation({
  method: CredentialService.method.finishPasskeyRegistration,
  access: { kind: "caller", callers: ["user"] },
  input: z.object({ credentialJson, name: passkeyName.optional() }),
  async run({ input, services, ctx, now }) {
    // One answer for every way a response can be wrong: malformed, for a spent, expired or
    // someone else's challenge, or failing verification.
    const invalid = () =>
      new InvalidArgumentError("invalid request: credentialJson: is not a valid passkey registration", {
        reason: "INVALID_PASSKEY_RESPONSE",
        violations: [{ field: "credentialJson", description: "is not a valid passkey registration" }],
      });
    const user = await callerUser(services, ctx);
    assertAddressVerified(user, "a passkey");
    const read = readRegistration(input.credentialJson);
    if (read === null) throw invalid();
    const challenge = await consumeOneTimeToken(
      services.storage,
      "passkey_registration",
      read.challenge,
      now,
    );
    if (challenge === null || challenge.userId !== user.id) throw invalid();
    const rp = relyingParty(accountConfig(services));
    const verified = await (await webauthn())
      .verifyRegistrationResponse({
        response: read.response,
        expectedChallenge: read.challenge,
        expectedOrigin: rp.origin,
        expectedRPID: rp.id,
        requireUserVerification: true,
      })
      .catch(() => null);
    if (!verified?.verified) throw invalid();
    const info = verified.registrationInfo;
    const passkey: PasskeyRecord = {
      id: info.credential.id,
      userId: user.id,
      name: input.name ?? "Passkey",
      publicKey: info.credential.publicKey,
      counter: info.credential.counter,
      transports: info.credential.transports ?? read.response.response.transports ?? [],
      deviceType: info.credentialDeviceType,
      backedUp: info.credentialBackedUp,
      createdAt: now,
      lastUsedAt: null,
    };
    try {
      await services.storage.transaction(async (tx) => {
        await tx.passkeys.insert(passkey);
        await auditAccount(tx, services, ctx, {
          userId: user.id,
          action: "user.passkey.create",
          resource: `passkey:${passkey.id}`,
          at: now,
        });
      });
    } catch (error) {
      if (error instanceof UniqueViolationError && error.constraint === "passkeys.id") {
        throw new AlreadyExistsError("this passkey is already registered", { reason: "PASSKEY_EXISTS" });
      }
      throw error;
    }
    return { passkey: toPasskeyMessage(passkey) };
  },
});

export const beginPasskeyLogin = defineOperation({
  method: AuthService.method.beginPasskeyLogin,
  access: { kind: "public" },
  input: z.object({}),
  async run({ services, now }) {
    const config = accountConfig(services);
    const options = await (await webauthn()).generateAuthenticationOptions({
      rpID: relyingParty(config).id,
      challenge: owned(services.random.bytes(32)),
      timeout: config.passkeyChallengeTtlSeconds * 1000,
      userVerification: "required",
    });
    await services.storage.transaction(async (tx) => {
      // Anyone may ask for challenges: prune the dead ones as new ones come.
      await tx.oneTimeTokens.deleteExpired("passkey_login", now);
      await issueOneTimeToken(tx, services, {
        purpose: "passkey_login",
        userId: null,
        ttlSeconds: config.passkeyChallengeTtlSeconds,
        now,
        token: options.challenge,
      });
    });
    return { optionsJson: JSON.stringify(options) };
  },
});

export const finishPasskeyLogin = defineOperation({
  method: AuthService.method.finishPasskeyLogin,
  access: { kind: "public", signsIn: true },
  input: z.object({ credentialJson }),
  async run({ input, services, ctx, now }) {
    const refused = new UnauthenticatedError("passkey sign-in failed", { reason: "INVALID_PASSKEY_LOGIN" });
    // Every refusal is a failed sign-in in the audit log (rate-limited there per address).
    const invalid = () => {
      void recordSecurityEvent(services, ctx, { kind: "sign_in_failed", resource: "passkey" });
      return refused;
    };
    const read = readAuthentication(input.credentialJson);
    if (read === null) throw invalid();
    if ((await consumeOneTimeToken(services.storage, "passkey_login", read.challenge, now)) === null) {
      throw invalid();
    }
    const passkey = await services.storage.passkeys.findById(read.response.id);
    if (!passkey) throw invalid();
    const handle = read.response.response.userHandle;
    if (handle !== undefined && handle !== encodeBase64Url(userHandle(passkey.userId))) throw invalid();
    const rp = relyingParty(accountConfig(services));
    const verified = await (await webauthn())
      .verifyAuthenticationResponse({
        response: read.response,
        expectedChallenge: read.challenge,
        expectedOrigin: rp.origin,
        expectedRPID: rp.id,
        credential: { id: passkey.id, publicKey: owned(passkey.publicKey), counter: passkey.counter },
        requireUserVerification: true,
      })
      .catch(() => null);
    if (!verified?.verified) throw invalid();
    const user = await services.storage.users.findById(passkey.userId);
    if (!user) throw invalid();
    // The counter moves with the session and its audit entry, or not at all.
    const session = await services.storage.transaction(async (tx) => {
      await tx.passkeys.recordUse(passkey.id, verified.authenticationInfo.newCounter, now);
      return startSession(services, user, ctx, "passkey", tx);
    });
    return { accessToken: session.accessToken, refreshToken: session.refreshToken };
  },
});

export const passkeyOperations = [
  listPasskeys,
  updatePasskey,
  deletePasskey,
  beginPasskeyRegistration,
  finishPasskeyRegistration,
  beginPasskeyLogin,
  finishPasskeyLogin,
];
