/**
 * Backup codes: CreateBackupCodes, ListBackupCodes, DeleteBackupCodes (CredentialService) and
 * LoginWithBackupCode (AuthService).
 *
 * A set is ten codes of 16 Crockford base32 characters (80 bits each, written `xxxx-xxxx-xxxx-xxxx`),
 * shown once and stored as SHA-256: with 80 bits, a fast hash is as good as a slow one. A new set
 * replaces the old one. Each code signs in once; storage consumes it atomically.
 *
 * @module
 */
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { AuthService, CredentialService } from "@wap/api";
import * as z from "zod";
import { recordSecurityEvent, signInResource } from "../audit/security-events.js";
import { auditAccount } from "../auth/audit.js";
import { callerUser } from "../auth/caller-user.js";
import { assertSignInAllowed } from "../auth/directory.js";
import { assertAddressVerified } from "../auth/mailbox-proof.js";
import { hashSecret } from "../auth/service-account-tokens.js";
import { startSession } from "../auth/sessions.js";
import { admitAttempt, attemptFailed, attemptSucceeded } from "../auth/throttle.js";
import { UnauthenticatedError } from "../errors.js";
import { defineOperation } from "../operations/operation.js";
import type { Random } from "../runtime.js";
import { email, text } from "../validation/rules.js";

const codesPerSet = 10;
// Crockford's base32: no I, L, O or U, so a code read aloud or typed is hard to get wrong.
const alphabet = "0123456789abcdefghjkmnpqrstvwxyz";

/** One new code, e.g. `7q2m-k9xd-0wfa-hv3c`. */
export function mintBackupCode(random: Random): string {
  const bytes = random.bytes(10);
  let bits = 0;
  let value = 0;
  let out = "";
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out += alphabet[(value >> bits) & 31];
    }
    value &= (1 << bits) - 1;
  }
  return out.match(/.{4}/g)?.join("-") ?? out;
}

/** The canonical form of a typed code: case, dashes and spaces ignored, Crockford's look-alikes mapped. */
export function normalizeBackupCode(code: string): string {
  return code.toLowerCase().replace(/[\s-]/g, "").replace(/[il]/g, "1").replace(/o/g, "0");
}

export const createBackupCodes = defineOperation({
  method: CredentialService.method.createBackupCodes,
  access: { kind: "caller", callers: ["user"] },
  input: z.object({}),
  async run({ services, ctx, now }) {
    const user = await callerUser(services, ctx);
    assertAddressVerified(user, "backup codes");
    const codes = Array.from({ length: codesPerSet }, () => mintBackupCode(services.random));
    await services.storage.transaction(async (tx) => {
      await tx.backupCodes.deleteForUser(user.id);
      await tx.backupCodes.insertMany(
        codes.map((code) => ({
          id: services.random.uuid(),
          userId: user.id,
          codeHash: hashSecret(normalizeBackupCode(code)),
          createdAt: now,
          usedAt: null,
        })),
      );
      await auditAccount(tx, services, ctx, {
        userId: user.id,
        action: "user.backup_codes.create",
        resource: `user:${user.id}`,
        at: now,
      });
    });
    return { codes };
  },
});

export const listBackupCodes = defineOperation({
  method: CredentialService.method.listBackupCodes,
  access: { kind: "caller", callers: ["user"] },
  input: z.object({}),
  async run({ services, ctx }) {
    const user = await callerUser(services, ctx);
    const codes = await services.storage.backupCodes.listByUser(user.id);
    return {
      codes: codes.map((code) => ({
        id: code.id,
        createdAt: timestampFromDate(code.createdAt),
        ...(code.usedAt === null ? {} : { usedAt: timestampFromDate(code.usedAt) }),
      })),
    };
  },
});

export const deleteBackupCodes = defineOperation({
  method: CredentialService.method.deleteBackupCodes,
  access: { kind: "caller", callers: ["user"] },
  input: z.object({}),
  async run({ services, ctx, now }) {
    const user = await callerUser(services, ctx);
    await services.storage.transaction(async (tx) => {
      await tx.backupCodes.deleteForUser(user.id);
      await auditAccount(tx, services, ctx, {
        userId: user.id,
        action: "user.backup_codes.delete",
        resource: `user:${user.id}`,
        at: now,
      });
    });
    return {};
  },
});

export const loginWithBackupCode = defineOperation({
  method: AuthService.method.loginWithBackupCode,
  access: { kind: "public", signsIn: true },
  input: z.object({ email: email.optional(), code: text({ min: 1 }).optional() }),
  async run({ input, services, ctx, now }) {
    // One answer for an unknown email, a wrong code and a used one.
    const invalid = () =>
      new UnauthenticatedError("invalid email or backup code", { reason: "INVALID_BACKUP_CODE" });
    if (input.email === undefined || input.code === undefined) throw invalid();
    // A backup code stands in for the password, so it must not get around enforced SSO either.
    await assertSignInAllowed(services, input.email, "backup_code");
    const subject = { account: input.email, ipAddress: ctx.ipAddress };
    await admitAttempt(services, subject, now);
    const user = await services.storage.users.findByEmail(input.email.toLowerCase());
    const codeHash = hashSecret(normalizeBackupCode(input.code));
    // The code is spent with the session and its audit entry, or not at all.
    const session =
      user &&
      (await services.storage.transaction(async (tx) =>
        (await tx.backupCodes.consume(user.id, codeHash, now))
          ? startSession(services, user, ctx, "backup_code", tx)
          : null,
      ));
    if (!session) {
      await attemptFailed(services, subject, now);
      await recordSecurityEvent(services, ctx, {
        kind: "sign_in_failed",
        resource: signInResource("backup_code", input.email),
      });
      throw invalid();
    }
    await attemptSucceeded(services, subject);
    return { accessToken: session.accessToken, refreshToken: session.refreshToken };
  },
});

export const backupCodeOperations = [
  createBackupCodes,
  listBackupCodes,
  deleteBackupCodes,
  loginWithBackupCode,
];
