/**
 * The storage contract of sign-in sessions and refresh tokens: round-trips, idempotent revocation,
 * one winner of a rotation. Registered by `runStorageContract`.
 *
 * @module
 */
import { describe, expect } from "vitest";
import {
  accountAt,
  aRefreshToken,
  aSession,
  at,
  aUser,
  type ContractContext,
  expectUnique,
  newSession,
  newUser,
  uid,
} from "./fixtures.js";

export function runSessionContract(ctx: ContractContext): void {
  const { test } = ctx;
  const storage = () => ctx.storage();

  describe("auth sessions and refresh tokens", () => {
    test("authSessions: round-trip, not found, revoke is idempotent", async () => {
      const user = aUser();
      await storage().users.insert(user);
      const session = aSession(user.id, { ipAddress: "", userAgent: "agent ✓" });
      await storage().authSessions.insert(session);
      expect(await storage().authSessions.findById(session.id)).toEqual(session);
      expect(await storage().authSessions.findById(uid())).toBeNull();

      await storage().authSessions.revoke(session.id, at(100, 1));
      expect((await storage().authSessions.findById(session.id))?.revokedAt).toEqual(at(100, 1));
      await storage().authSessions.revoke(session.id, at(200, 2));
      expect(await storage().authSessions.findById(session.id)).toEqual({
        ...session,
        revokedAt: at(100, 1),
      });
      await expect(storage().authSessions.revoke(uid(), at(1))).resolves.toBeUndefined();
    });

    test("refreshTokens: round-trip, not found, duplicate hash", async () => {
      const user = aUser();
      await storage().users.insert(user);
      const session = aSession(user.id);
      await storage().authSessions.insert(session);
      const token = aRefreshToken(session.id);
      await storage().refreshTokens.insert(token);
      expect(await storage().refreshTokens.findByHash(token.tokenHash)).toEqual(token);
      expect(await storage().refreshTokens.findByHash(`sha256-${uid()}`)).toBeNull();
      const duplicate = aRefreshToken(session.id, { tokenHash: token.tokenHash });
      await expectUnique(storage().refreshTokens.insert(duplicate), "refresh_tokens.token_hash");
      expect(await storage().refreshTokens.findByHash(token.tokenHash)).toEqual(token);
    });

    test("refreshTokens: markRotated is true once, then false; unknown ids are false", async () => {
      const user = aUser();
      await storage().users.insert(user);
      const session = aSession(user.id);
      await storage().authSessions.insert(session);
      const token = aRefreshToken(session.id);
      await storage().refreshTokens.insert(token);
      expect(await storage().refreshTokens.markRotated(token.id, at(300, 3))).toBe(true);
      expect(await storage().refreshTokens.markRotated(token.id, at(400, 4))).toBe(false);
      expect((await storage().refreshTokens.findByHash(token.tokenHash))?.rotatedAt).toEqual(at(300, 3));
      expect(await storage().refreshTokens.markRotated(uid(), at(1))).toBe(false);
    });

    test("refreshTokens: markRotated is true for exactly one of 20 concurrent calls", async () => {
      const user = aUser();
      await storage().users.insert(user);
      const session = aSession(user.id);
      await storage().authSessions.insert(session);
      const token = aRefreshToken(session.id);
      await storage().refreshTokens.insert(token);
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => storage().refreshTokens.markRotated(token.id, at(500 + i))),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
      const winner = results.indexOf(true);
      expect((await storage().refreshTokens.findByHash(token.tokenHash))?.rotatedAt).toEqual(
        at(500 + winner),
      );
    });
  });

  userSessions(ctx);
}

function userSessions(ctx: ContractContext): void {
  const { test } = ctx;

  const at = accountAt;

  const storage = () => ctx.storage();

  describe("accounts: users, sessions, members", () => {
    test("authSessions: listActiveForUser skips revoked, expired and other users' sessions", async () => {
      const user = await newUser(ctx);
      const other = await newUser(ctx);
      const live1 = await newSession(ctx, user.id, { createdAt: at(1), expiresAt: at(1000) });
      const live2 = await newSession(ctx, user.id, { createdAt: at(2), expiresAt: at(1000) });
      const revoked = await newSession(ctx, user.id, { createdAt: at(3), expiresAt: at(1000) });
      await storage().authSessions.revoke(revoked.id, at(4));
      await newSession(ctx, user.id, { createdAt: at(0), expiresAt: at(500) });
      await newSession(ctx, other.id);
      expect(await storage().authSessions.listActiveForUser(user.id, at(500))).toEqual([live1, live2]);
    });

    test("authSessions: revokeAllForUser spares the excepted session and other users", async () => {
      const user = await newUser(ctx);
      const other = await newUser(ctx);
      const keep = await newSession(ctx, user.id);
      const drop1 = await newSession(ctx, user.id);
      const drop2 = await newSession(ctx, user.id);
      await storage().authSessions.revoke(drop2.id, at(1));
      const theirs = await newSession(ctx, other.id);
      await storage().authSessions.revokeAllForUser(user.id, at(7), keep.id);
      expect((await storage().authSessions.findById(keep.id))?.revokedAt).toBeNull();
      expect((await storage().authSessions.findById(drop1.id))?.revokedAt).toEqual(at(7));
      // An earlier revocation time stands.
      expect((await storage().authSessions.findById(drop2.id))?.revokedAt).toEqual(at(1));
      expect((await storage().authSessions.findById(theirs.id))?.revokedAt).toBeNull();
      await storage().authSessions.revokeAllForUser(user.id, at(8));
      expect((await storage().authSessions.findById(keep.id))?.revokedAt).toEqual(at(8));
    });
  });
}
