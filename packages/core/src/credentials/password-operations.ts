/**
 * The caller's password: UpdatePassword and DeletePassword (CredentialService).
 *
 * Both prove the current password first (throttled like Login, since a stolen session could
 * otherwise guess it). A new password signs out every other session.
 *
 * @module
 */

import { CredentialService } from "@wap/api";
import * as z from "zod";
import { auditAccount } from "../auth/audit.js";
import { callerSessionId, callerUser } from "../auth/caller-user.js";
import { admitAttempt, attemptFailed, attemptSucceeded } from "../auth/throttle.js";
import type { CallContext } from "../context.js";
import { FailedPreconditionError, InvalidArgumentError } from "../errors.js";
import { defineOperation } from "../operations/operation.js";
import type { Services } from "../operations/services.js";
import type { UserRecord } from "../storage/users.js";
import { currentPassword, replacementPassword } from "../validation/bounds.js";
import { signInMethods } from "./sign-in-methods.js";

/** Throws unless `presented` is the user's password. */
async function proveCurrentPassword(
  services: Services,
  ctx: CallContext,
  user: UserRecord & { passwordHash: string },
  presented: string | undefined,
  now: Date,
): Promise<void> {
  // Optional on the wire only for accounts without a password (UpdatePassword sets their first).
  if (presented === undefined) {
    throw new InvalidArgumentError("invalid request: currentPassword: is required", {
      violations: [{ field: "currentPassword", description: "is required" }],
    });
  }
  const subject = { account: user.email, ipAddress: ctx.ipAddress };
  await admitAttempt(services, subject, now);
  if (!(await services.passwords.verify(user.passwordHash, presented))) {
    await attemptFailed(services, subject, now);
    throw new InvalidArgumentError("invalid request: currentPassword: is not the current password", {
      reason: "WRONG_PASSWORD",
      violations: [{ field: "currentPassword", description: "is not the current password" }],
    });
  }
  await attemptSucceeded(services, subject);
}

const hasPassword = (user: UserRecord): user is UserRecord & { passwordHash: string } =>
  user.passwordHash !== null;

export const updatePassword = defineOperation({
  method: CredentialService.method.updatePassword,
  access: { kind: "caller", callers: ["user"] },
  input: z.object({
    currentPassword: currentPassword.optional(),
    newPassword: replacementPassword,
  }),
  async run({ input, services, ctx, now }) {
    const user = await callerUser(services, ctx);
    // An account without a password (passkeys only) sets its first one: there is nothing to prove.
    if (hasPassword(user)) await proveCurrentPassword(services, ctx, user, input.currentPassword, now);
    const passwordHash = await services.passwords.hash(input.newPassword);
    await services.storage.transaction(async (tx) => {
      await tx.users.update(user.id, { passwordHash }, now);
      await tx.authSessions.revokeAllForUser(user.id, now, callerSessionId(ctx));
      await auditAccount(tx, services, ctx, {
        userId: user.id,
        action: "user.password.update",
        resource: `user:${user.id}`,
        at: now,
      });
    });
    return {};
  },
});

export const deletePassword = defineOperation({
  method: CredentialService.method.deletePassword,
  access: { kind: "caller", callers: ["user"] },
  input: z.object({ currentPassword }),
  async run({ input, services, ctx, now }) {
    const user = await callerUser(services, ctx);
    if (!hasPassword(user)) {
      throw new FailedPreconditionError("this account has no password", { reason: "NO_PASSWORD" });
    }
    const methods = await signInMethods(services.storage, user);
    if (methods.passkeys + methods.linkedAccounts === 0) {
      throw new FailedPreconditionError(
        "the password is this account's only way to sign in: add a passkey before removing it",
        { reason: "LAST_SIGN_IN_METHOD" },
      );
    }
    await proveCurrentPassword(services, ctx, user, input.currentPassword, now);
    await services.storage.transaction(async (tx) => {
      await tx.users.update(user.id, { passwordHash: null }, now);
      await auditAccount(tx, services, ctx, {
        userId: user.id,
        action: "user.password.delete",
        resource: `user:${user.id}`,
        at: now,
      });
    });
    return {};
  },
});

export const passwordOperations = [updatePassword, deletePassword];
