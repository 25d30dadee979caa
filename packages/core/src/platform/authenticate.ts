import {
  legacyServiceAccountTokenPrefix,
  parseLegacyServiceAccountToken,
  secretMatches,
} from "../auth/service-account-tokens.js";
import type { Caller } from "../context.js";
import { authenticateSignedRequest } from "../daemons/authenticate.js";
import { UnauthenticatedError } from "../errors.js";
import type { Services } from "../operations/services.js";

/** The credentials a request carried, as the transport found them. */
export interface Credentials {
  /** The value after `Authorization: Bearer `. */
  readonly bearer?: string | undefined;
  /** The `session` cookie. */
  readonly sessionCookie?: string | undefined;
  /**
   * A CLI device's signed challenge: the value after `Authorization: Platform `, and the path of
   * the request it came with (the challenge is only good for that procedure). Leave it out on
   * StreamCLILogin, where the CLI sends one before its key is registered.
   */
  readonly platformChallenge?:
    | {
        readonly value: string;
        readonly procedure: string;
        /** Which kind of client signed, when its headers say (`Platform-Daemon-*` or `Platform-Client-*`). */
        readonly family?: "daemon" | "device";
      }
    | undefined;
}

/** How the caller proved who it is; the server uses it for CSRF rules (cookies need them). */
export type CredentialSource = "none" | "bearer" | "cookie" | "device";

/**
 * Resolves credentials to a caller. No credential at all is the anonymous caller; a credential
 * that is present but not valid is an error, never a silent downgrade to anonymous.
 */
export async function authenticate(
  services: Services,
  credentials: Credentials,
): Promise<{ caller: Caller; source: CredentialSource }> {
  const now = services.clock.now();
  if (credentials.bearer !== undefined) {
    const bearer = credentials.bearer.trim();
    if (
      bearer.startsWith(legacyServiceAccountTokenPrefix) ||
      services.serviceAccountTokens.recognizes(bearer)
    ) {
      return { caller: await authenticateServiceAccount(services, bearer, now), source: "bearer" };
    }
    return { caller: await authenticateUser(services, bearer, now), source: "bearer" };
  }
  if (credentials.platformChallenge !== undefined) {
    return {
      caller: await authenticateSignedRequest(services, credentials.platformChallenge),
      source: "device",
    };
  }
  if (credentials.sessionCookie !== undefined && credentials.sessionCookie !== "") {
    return { caller: await authenticateUser(services, credentials.sessionCookie, now), source: "cookie" };
  }
  return { caller: { kind: "anonymous" }, source: "none" };
}

async function authenticateUser(services: Services, token: string, now: Date): Promise<Caller> {
  let claims: Awaited<ReturnType<Services["accessTokens"]["verify"]>>;
  try {
    claims = await services.accessTokens.verify(token, now);
  } catch (cause) {
    throw new UnauthenticatedError("the access token is invalid or expired; sign in again or refresh it", {
      reason: "INVALID_ACCESS_TOKEN",
      cause,
    });
  }
  // Access tokens are short-lived, but signing out must take effect at once: check the session.
  const session = await services.storage.authSessions.findById(claims.sessionId);
  if (
    !session ||
    session.revokedAt !== null ||
    session.expiresAt <= now ||
    session.userId !== claims.userId
  ) {
    throw new UnauthenticatedError("this session has ended; sign in again", { reason: "SESSION_ENDED" });
  }
  return { kind: "user", userId: claims.userId, sessionId: claims.sessionId };
}

/** Who a presented service-account token says it is, and what to compare with the stored hash. */
async function readServiceAccountToken(
  services: Services,
  token: string,
  now: Date,
): Promise<{ accountId: string; workspaceId?: string; secret: string } | null> {
  if (token.startsWith(legacyServiceAccountTokenPrefix)) return parseLegacyServiceAccountToken(token);
  try {
    const claims = await services.serviceAccountTokens.verify(token, now);
    return { accountId: claims.accountId, workspaceId: claims.workspaceId, secret: token };
  } catch {
    return null;
  }
}

async function authenticateServiceAccount(services: Services, token: string, now: Date): Promise<Caller> {
  const invalid = () =>
    new UnauthenticatedError("the service account token is invalid, expired or revoked", {
      reason: "INVALID_SERVICE_ACCOUNT_TOKEN",
    });
  const presented = await readServiceAccountToken(services, token, now);
  if (!presented) throw invalid();
  // Checked against storage on every call: a deleted account's token stops at once, everywhere.
  const account = await services.storage.serviceAccounts.findByIdForAuthentication(presented.accountId);
  if (!account || !secretMatches(presented.secret, account.tokenHash)) throw invalid();
  if (presented.workspaceId !== undefined && presented.workspaceId !== account.workspaceId) throw invalid();
  if (account.expiresAt !== null && account.expiresAt <= now) throw invalid();
  // Written at most once per resolution period: a busy automation would otherwise turn every
  // read into a write.
  const resolutionMs = services.config.lastUsedResolutionSeconds * 1000;
  if (account.lastUsedAt === null || now.getTime() - account.lastUsedAt.getTime() >= resolutionMs) {
    await services.storage.serviceAccounts.touchLastUsed(account.id, now);
  }
  return {
    kind: "service_account",
    serviceAccountId: account.id,
    workspaceId: account.workspaceId,
    role: account.role,
  };
}
