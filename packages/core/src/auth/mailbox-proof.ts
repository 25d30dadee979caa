/**
 * Proof of mailbox control, and what it settles about an account (docs/security.md, "Account
 * pre-hijacking").
 *
 * Registration needs no proof that the address is the registrant's. So until the account's
 * address is verified, its only credential is the password, and the first proof (following a
 * verification link, or resetting the password from a reset link) clears out what whoever
 * registered left behind: every passkey, backup code, CLI device, linked identity and session.
 * A verification keeps the password and the session of the caller only when that caller is
 * signed in to the account in the very request that verifies (it knows the password and reads
 * the mailbox); any other verification removes the password too, and the owner sets one with
 * ForgotPassword.
 *
 * @module
 */
import { FailedPreconditionError } from "../errors.js";
import type { Repositories } from "../storage/storage.js";
import type { UserRecord } from "../storage/users.js";

/** Refuses to add a credential other than the password to an account whose address is unproven. */
export function assertAddressVerified(user: UserRecord, what: string): void {
  if (!user.emailVerified) {
    throw new FailedPreconditionError(
      `verify your email address before adding ${what}: follow the link mailed to ${user.email}`,
      { reason: "EMAIL_NOT_VERIFIED" },
    );
  }
}

/** What the first proof of mailbox control leaves in place. */
export interface ProofKeeps {
  /** The session of the caller who proved it, when that caller is signed in to the account. */
  readonly sessionId?: string | undefined;
  /** Whether the password survives (a verification by the signed-in registrant). */
  readonly password: boolean;
}

/**
 * Removes every credential and session of `user` created before its first proof of mailbox
 * control, except what `keeps` names. Call it in the transaction that records the proof, only
 * when the account had no verified address before.
 */
export async function settleFirstMailboxProof(
  tx: Repositories,
  user: UserRecord,
  now: Date,
  keeps: ProofKeeps,
): Promise<void> {
  await tx.backupCodes.deleteForUser(user.id);
  for (const passkey of await tx.passkeys.listByUser(user.id)) await tx.passkeys.delete(user.id, passkey.id);
  for (const device of await tx.userDevices.listByUser(user.id))
    await tx.userDevices.delete(user.id, device.id);
  for (const link of await tx.linkedAccounts.listByUser(user.id)) {
    await tx.linkedAccounts.delete(user.id, link.provider);
  }
  await tx.authSessions.revokeAllForUser(user.id, now, keeps.sessionId);
  // Without a password the mailbox is the way back in, whatever the owner chose before.
  if (!keeps.password) await tx.users.update(user.id, { passwordHash: null, enableEmailRecovery: true }, now);
}
