/**
 * Email verification and password recovery: VerifyEmail, ResendVerification, ForgotPassword and
 * ResetPassword (AuthService).
 *
 * Links carry a 256-bit single-use token (stored as SHA-256) that expires. Calls that name an
 * email answer the same whether or not it has an account, and send at most one mail per user and
 * purpose per `mailIntervalSeconds`. Any bad token (unknown, expired, used, or for an address the
 * account no longer has, for verification and reset links alike) gets the same `invalid_argument`.
 *
 * @module
 */

import { AuthService } from "@wap/api";
import * as z from "zod";
import { InvalidArgumentError } from "../errors.js";
import { sendInBackground } from "../mail/deliver.js";
import { resetPasswordMail, verifyEmailMail } from "../mail/templates.js";
import { defineOperation } from "../operations/operation.js";
import type { Services } from "../operations/services.js";
import type { OneTimeTokenPurpose, OneTimeTokenRecord } from "../storage/one-time-tokens.js";
import { UniqueViolationError } from "../storage/storage.js";
import type { UserRecord } from "../storage/users.js";
import { replacementPassword } from "../validation/bounds.js";
import { email, sitePath, text } from "../validation/rules.js";
import { accountConfig, accountLink } from "./account-config.js";
import { auditAccount } from "./audit.js";
import { callerSessionId } from "./caller-user.js";
import { settleFirstMailboxProof } from "./mailbox-proof.js";
import { consumeOneTimeToken, issuedRecently, issueOneTimeToken } from "./one-time-tokens.js";
import { attemptSucceeded } from "./throttle.js";

/** One answer for every bad token, so a caller never learns which check failed. */
function invalidToken(): InvalidArgumentError {
  return new InvalidArgumentError("invalid request: token: is invalid or has expired", {
    reason: "INVALID_TOKEN",
    violations: [{ field: "token", description: "is invalid or has expired" }],
  });
}

/** Replaces the user's pending tokens of `purpose` with a new one, unless one went out just now. */
async function freshToken(
  services: Services,
  user: UserRecord,
  purpose: OneTimeTokenPurpose,
  ttlSeconds: number,
  now: Date,
): Promise<string | null> {
  const config = accountConfig(services);
  if (await issuedRecently(services, user.id, purpose, now, config.mailIntervalSeconds)) return null;
  return services.storage.transaction(async (tx) => {
    await tx.oneTimeTokens.deleteForUser(user.id, purpose);
    return issueOneTimeToken(tx, services, {
      purpose,
      userId: user.id,
      data: { email: user.email },
      ttlSeconds,
      now,
    });
  });
}

export const resendVerification = defineOperation({
  method: AuthService.method.resendVerification,
  access: { kind: "public" },
  input: z.object({ email: email.optional(), next: sitePath.optional() }),
  async run({ input, services, now }) {
    if (input.email === undefined) return {};
    const user = await services.storage.users.findByEmail(input.email.toLowerCase());
    if (!user || user.emailVerified) return {};
    const config = accountConfig(services);
    const token = await freshToken(services, user, "verify_email", config.emailVerificationTtlSeconds, now);
    if (token !== null) {
      const link = accountLink(config, "/verify-email", { token, ...(input.next && { next: input.next }) });
      sendInBackground(services, verifyEmailMail(user.email, link, config.emailVerificationTtlSeconds));
    }
    return {};
  },
});

export const verifyEmail = defineOperation({
  method: AuthService.method.verifyEmail,
  access: { kind: "public" },
  input: z.object({ token: text({}).optional() }),
  async run({ input, services, now, ctx }) {
    const token = input.token;
    if (token === undefined || token === "") throw invalidToken();
    const done = await services.storage
      .transaction(async (tx) => {
        // One link type for both: confirming the address of a new account, and a change of address.
        const record: OneTimeTokenRecord | null =
          (await consumeOneTimeToken(tx, "verify_email", token, now)) ??
          (await consumeOneTimeToken(tx, "change_email", token, now));
        if (record === null || record.userId === null) return false;
        const user = await tx.users.findById(record.userId);
        const address = record.data.email;
        if (!user || address === undefined) return false;
        // The account moved to another address since: this link proves nothing about it.
        if (record.purpose === "verify_email" && user.email !== address) return false;
        if (!user.emailVerified) {
          // The first proof: whoever registered may not own the mailbox (mailbox-proof.ts).
          const signedIn = ctx.caller.kind === "user" && ctx.caller.userId === user.id;
          await settleFirstMailboxProof(tx, user, now, {
            sessionId: signedIn ? callerSessionId(ctx) : undefined,
            password: signedIn,
          });
        }
        await tx.users.update(user.id, { email: address, emailVerified: true }, now);
        await auditAccount(tx, services, ctx, {
          userId: user.id,
          action: record.purpose === "verify_email" ? "user.email.verify" : "user.email.change",
          resource: `user:${user.id}`,
          at: now,
        });
        return true;
      })
      .catch((error: unknown) => {
        // The new address was taken by another account meanwhile: the link cannot be honoured.
        if (error instanceof UniqueViolationError && error.constraint === "users.email") return false;
        throw error;
      });
    if (!done) throw invalidToken();
    return {};
  },
});

/**
 * Account work that must not shape an answer's timing, run one after another per platform (so two
 * quick requests still see each other's tokens) after the answer has gone.
 */
function runDetached(services: Services, work: () => Promise<void>): void {
  services.state.accountWork.run(work);
}

export const forgotPassword = defineOperation({
  method: AuthService.method.forgotPassword,
  access: { kind: "public" },
  input: z.object({ email: email.optional() }),
  async run({ input, services, now }) {
    const address = input.email?.toLowerCase();
    // The answer waits for nothing that depends on the address: known and unknown take one path.
    if (address !== undefined) runDetached(services, () => mailResetLink(services, address, now));
    return {};
  },
});

/** Mails a reset link to the account at `address`, if there is one that may be recovered so. */
async function mailResetLink(services: Services, address: string, now: Date): Promise<void> {
  const user = await services.storage.users.findByEmail(address);
  // A passwordless (passkey-only) account is recovered by email only if its owner allowed it.
  if (!user || (user.passwordHash === null && !user.enableEmailRecovery)) return;
  const config = accountConfig(services);
  const token = await freshToken(services, user, "reset_password", config.passwordResetTtlSeconds, now);
  if (token !== null) {
    const link = accountLink(config, "/reset-password", { token });
    sendInBackground(services, resetPasswordMail(user.email, link, config.passwordResetTtlSeconds));
  }
}

export const resetPassword = defineOperation({
  method: AuthService.method.resetPassword,
  access: { kind: "public" },
  input: z.object({ token: text({ min: 1 }), newPassword: replacementPassword }),
  async run({ input, services, now, ctx }) {
    const { token } = input;
    // Hashed before the token is spent, so a slow hash cannot leave a spent token and no password.
    const passwordHash = await services.passwords.hash(input.newPassword);
    const user = await services.storage.transaction(async (tx) => {
      const record = await consumeOneTimeToken(tx, "reset_password", token, now);
      if (record === null || record.userId === null) return null;
      const found = await tx.users.findById(record.userId);
      // The link proves control of the mailbox it was sent to, and nothing once the account has
      // moved to another address: whoever still reads the old mailbox must not take it over.
      if (!found || found.email !== record.data.email) return null;
      // The first proof of the mailbox: nothing the registrant added survives (mailbox-proof.ts).
      if (!found.emailVerified) await settleFirstMailboxProof(tx, found, now, { password: false });
      await tx.users.update(found.id, { passwordHash, emailVerified: true }, now);
      // Whoever knew the old password (or held a session) is out.
      await tx.authSessions.revokeAllForUser(found.id, now);
      await tx.oneTimeTokens.deleteForUser(found.id, "reset_password");
      await auditAccount(tx, services, ctx, {
        userId: found.id,
        action: "user.password.reset",
        resource: `user:${found.id}`,
        at: now,
      });
      return found;
    });
    if (user === null) throw invalidToken();
    await attemptSucceeded(services, { account: user.email, ipAddress: ctx.ipAddress });
    return {};
  },
});

export const recoveryOperations = [resendVerification, verifyEmail, forgotPassword, resetPassword];
