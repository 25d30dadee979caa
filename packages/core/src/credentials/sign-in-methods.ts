import type { Repositories } from "../storage/storage.js";
import type { UserRecord } from "../storage/users.js";

/** The ways `user` can sign in, so no change leaves an account nobody can enter. */
export async function signInMethods(
  tx: Repositories,
  user: UserRecord,
): Promise<{ password: boolean; passkeys: number; linkedAccounts: number }> {
  const [passkeys, linked] = await Promise.all([
    tx.passkeys.listByUser(user.id),
    tx.linkedAccounts.listByUser(user.id),
  ]);
  return { password: user.passwordHash !== null, passkeys: passkeys.length, linkedAccounts: linked.length };
}
