/**
 * Sign-up, sign-in and sessions: Register, Login, RefreshToken, Logout (AuthService) and Whoami
 * (UserService).
 *
 * A login creates a session (a family of refresh tokens). Access tokens name their session, so
 * Logout, and the reuse of a spent refresh token, end it at once everywhere.
 *
 * @module
 */

import { AuthService, UserService } from "@wap/api";
import * as z from "zod";
import { recordSecurityEvent, signInResource } from "../audit/security-events.js";
import { AlreadyExistsError, NotFoundError, UnauthenticatedError } from "../errors.js";
import { sendInBackground } from "../mail/deliver.js";
import { verifyEmailMail } from "../mail/templates.js";
import { defineOperation } from "../operations/operation.js";
import { UniqueViolationError } from "../storage/storage.js";
import type { UserRecord } from "../storage/users.js";
import { currentPassword, newPassword, personName, username } from "../validation/bounds.js";
import { email, sitePath } from "../validation/rules.js";
import { accountConfig, accountLink } from "./account-config.js";
import { auditAccount } from "./audit.js";
import { assertPasswordLoginAllowed } from "./directory.js";
import { toUserMessage } from "./messages.js";
import { issueOneTimeToken } from "./one-time-tokens.js";
import { hashSecret } from "./service-account-tokens.js";
import { mintRefreshToken, refreshTokenPrefix, startSession } from "./sessions.js";
import { admitAttempt, attemptFailed, attemptSucceeded } from "./throttle.js";

/** A username another account has (usernames are unique whatever their case). */
export function usernameTaken(username: string): AlreadyExistsError {
  return new AlreadyExistsError(`the username '${username}' is taken`, { reason: "USERNAME_TAKEN" });
}

// Explicit presence makes every field optional on the wire; registration needs them all.
// `next` rides in the verification link, so an invitation survives the detour through the mailbox.
const registerInput = z.object({
  name: personName,
  email,
  username,
  password: newPassword,
  next: sitePath.optional(),
});

export const register = defineOperation({
  method: AuthService.method.register,
  access: { kind: "public" },
  input: registerInput,
  async run({ input, services, now, ctx }) {
    const emailKey = input.email.toLowerCase();
    // Hash first, whatever comes next: the answer's timing must not tell whether the email is taken.
    const passwordHash = await services.passwords.hash(input.password);
    // The username is public (it names members and certificates): checked before the email, so a
    // taken username gets the same answer whether or not the email has an account.
    if (await services.storage.users.findByUsername(input.username)) throw usernameTaken(input.username);
    const existing = await services.storage.users.findByEmail(emailKey);
    if (existing) {
      // The same answer, and a write like a new account's: registration must not reveal accounts.
      await services.storage.transaction((tx) =>
        auditAccount(tx, services, ctx, {
          userId: existing.id,
          action: "user.register.existing_email",
          resource: `user:${existing.id}`,
          at: now,
        }),
      );
      return {};
    }
    const config = accountConfig(services);
    const user: UserRecord = {
      id: services.random.uuid(),
      name: input.name,
      username: input.username,
      email: emailKey,
      emailVerified: false,
      picture: "",
      passwordHash,
      enableEmailRecovery: false,
      createdAt: now,
      updatedAt: now,
    };
    let token: string;
    try {
      token = await services.storage.transaction(async (tx) => {
        await tx.users.insert(user);
        await auditAccount(tx, services, ctx, {
          userId: user.id,
          action: "user.register",
          resource: `user:${user.id}`,
          at: now,
        });
        return issueOneTimeToken(tx, services, {
          purpose: "verify_email",
          userId: user.id,
          data: { email: emailKey },
          ttlSeconds: config.emailVerificationTtlSeconds,
          now,
        });
      });
    } catch (error) {
      if (error instanceof UniqueViolationError && error.constraint === "users.username") {
        throw usernameTaken(input.username);
      }
      // A concurrent registration with the same email: same silent answer as above.
      if (error instanceof UniqueViolationError && error.constraint === "users.email") return {};
      throw error;
    }
    const link = accountLink(config, "/verify-email", { token, ...(input.next && { next: input.next }) });
    sendInBackground(services, verifyEmailMail(emailKey, link, config.emailVerificationTtlSeconds));
    return {};
  },
});

export const login = defineOperation({
  method: AuthService.method.login,
  access: { kind: "public", signsIn: true },
  input: z.object({ email: email.optional(), password: currentPassword.optional() }),
  async run({ input, services, ctx, now }) {
    const invalid = () => new UnauthenticatedError("invalid email or password", { reason: "INVALID_LOGIN" });
    if (input.email === undefined || input.password === undefined) throw invalid();
    await assertPasswordLoginAllowed(services, input.email);
    const subject = { account: input.email, ipAddress: ctx.ipAddress };
    await admitAttempt(services, subject, now);
    const user = await services.storage.users.findByEmail(input.email.toLowerCase());
    let ok = false;
    if (!user || user.passwordHash === null) await services.passwords.burn(input.password);
    else ok = await services.passwords.verify(user.passwordHash, input.password);
    if (!user || !ok) {
      await attemptFailed(services, subject, now);
      await recordSecurityEvent(services, ctx, {
        kind: "sign_in_failed",
        resource: signInResource("password", input.email),
      });
      throw invalid();
    }
    await attemptSucceeded(services, subject);
    const session = await startSession(services, user, ctx);
    return { accessToken: session.accessToken, refreshToken: session.refreshToken };
  },
});

export const refreshToken = defineOperation({
  method: AuthService.method.refreshToken,
  access: { kind: "public", signsIn: true, refreshCookie: true },
  input: z.object({ refreshToken: z.string().max(512).optional() }),
  async run({ input, services, now }) {
    const invalid = () =>
      new UnauthenticatedError("the refresh token is invalid, expired or already used; sign in again", {
        reason: "INVALID_REFRESH_TOKEN",
      });
    const presented = input.refreshToken ?? "";
    if (!presented.startsWith(refreshTokenPrefix)) throw invalid();
    const stored = await services.storage.refreshTokens.findByHash(
      hashSecret(presented.slice(refreshTokenPrefix.length)),
    );
    if (!stored || stored.expiresAt <= now) throw invalid();
    const session = await services.storage.authSessions.findById(stored.sessionId);
    if (!session || session.revokedAt !== null || session.expiresAt <= now) throw invalid();
    const next = mintRefreshToken(services);
    const rotated = await services.storage.transaction(async (tx) => {
      if (!(await tx.refreshTokens.markRotated(stored.id, now))) return false;
      await tx.refreshTokens.insert({
        id: services.random.uuid(),
        sessionId: session.id,
        tokenHash: next.tokenHash,
        createdAt: now,
        expiresAt: session.expiresAt,
        rotatedAt: null,
      });
      return true;
    });
    if (!rotated) {
      // A spent token came back: whoever holds it may have stolen it. End the whole session.
      await services.storage.authSessions.revoke(session.id, now);
      throw invalid();
    }
    const access = await services.accessTokens.issue(session.userId, session.id, now);
    return { accessToken: access.token, refreshToken: next.token };
  },
});

export const logout = defineOperation({
  method: AuthService.method.logout,
  access: { kind: "caller", callers: ["user"] },
  input: z.object({}),
  async run({ ctx, services, now }) {
    const caller = ctx.caller;
    if (caller.kind !== "user") return {};
    await services.storage.transaction(async (tx) => {
      await tx.authSessions.revoke(caller.sessionId, now);
      await auditAccount(tx, services, ctx, {
        userId: caller.userId,
        action: "user.logout",
        resource: `session:${caller.sessionId}`,
        at: now,
      });
    });
    return {};
  },
});

export const whoami = defineOperation({
  method: UserService.method.whoami,
  access: { kind: "caller", callers: ["user"] },
  input: z.object({}),
  async run({ ctx, services }) {
    const userId = ctx.caller.kind === "user" ? ctx.caller.userId : "";
    const user = await services.storage.users.findById(userId);
    if (!user) throw new NotFoundError("the signed-in user no longer exists");
    return { user: toUserMessage(user) };
  },
});

export const authOperations = [register, login, refreshToken, logout, whoami];
