/**
 * Login sessions: every way of signing in (password, backup code, passkey) ends here.
 *
 * @module
 */
import type { CallContext } from "../context.js";
import { toHex } from "../lib/bytes.js";
import type { Services } from "../operations/services.js";
import type { Repositories } from "../storage/storage.js";
import type { UserRecord } from "../storage/users.js";
import { auditAccount } from "./audit.js";
import { assertSignInAllowed, type SignInMethod } from "./directory.js";
import { hashSecret } from "./service-account-tokens.js";

export const refreshTokenPrefix = "wapr_";

/** A new refresh token and the hash to store. */
export function mintRefreshToken(services: Services): { token: string; tokenHash: string } {
  const secret = toHex(services.random.bytes(32));
  return { token: `${refreshTokenPrefix}${secret}`, tokenHash: hashSecret(secret) };
}

/**
 * The one place a login session row is written: for `userId`, from `now` for `ttlSeconds`,
 * remembering where it was started from. Returns its id and end.
 */
export async function insertAuthSession(
  tx: Repositories,
  services: Pick<Services, "random">,
  session: {
    readonly userId: string;
    readonly now: Date;
    readonly ttlSeconds: number;
    readonly from: Pick<CallContext, "ipAddress" | "userAgent">;
  },
): Promise<{ sessionId: string; expiresAt: Date }> {
  const sessionId = services.random.uuid();
  const expiresAt = new Date(session.now.getTime() + session.ttlSeconds * 1000);
  await tx.authSessions.insert({
    id: sessionId,
    userId: session.userId,
    createdAt: session.now,
    expiresAt,
    revokedAt: null,
    ipAddress: session.from.ipAddress,
    userAgent: session.from.userAgent,
  });
  return { sessionId, expiresAt };
}

/**
 * Creates a session for `user` and its first tokens; `method` names the proof in the audit log.
 * Refuses a method the account's organisation does not allow (enforced SSO), so no way of
 * signing in can get around that rule.
 */
export async function startSession(
  services: Services,
  user: UserRecord,
  ctx: Pick<CallContext, "ipAddress" | "userAgent" | "requestId">,
  method: SignInMethod = "password",
  /** The transaction the session starts in (a credential is spent with it), if any. */
  tx?: Repositories,
): Promise<{ accessToken: string; refreshToken: string; sessionId: string }> {
  await assertSignInAllowed(services, user.email, method, tx);
  const now = services.clock.now();
  const refresh = mintRefreshToken(services);
  const sessionId = await services.storage.transaction(async (tx) => {
    const { sessionId, expiresAt } = await insertAuthSession(tx, services, {
      userId: user.id,
      now,
      ttlSeconds: services.config.refreshTokenTtlSeconds,
      from: ctx,
    });
    await tx.refreshTokens.insert({
      id: services.random.uuid(),
      sessionId,
      tokenHash: refresh.tokenHash,
      createdAt: now,
      expiresAt,
      rotatedAt: null,
    });
    await auditAccount(tx, services, ctx, {
      userId: user.id,
      action: method === "password" ? "user.login" : `user.login.${method}`,
      resource: `session:${sessionId}`,
      at: now,
    });
    return sessionId;
  });
  const access = await services.accessTokens.issue(user.id, sessionId, now);
  return { accessToken: access.token, refreshToken: refresh.token, sessionId };
}
