/**
 * The storage contract of enrolment tokens: one per workspace, found by hash across workspaces.
 * Registered by `runStorageContract`.
 *
 * @module
 */
import { describe, expect } from "vitest";
import { anEnrollToken, type ContractContext, daemonAt, expectUnique } from "./fixtures.js";

export function runEnrollTokenContract(ctx: ContractContext): void {
  enrollTokenLifecycle(ctx);
}

function enrollTokenLifecycle(ctx: ContractContext): void {
  const { test, seedWorkspace } = ctx;

  const at = daemonAt;

  describe("enroll tokens", () => {
    test("enrollTokens: replace, find by workspace and by hash, replace again, delete", async () => {
      const storage = ctx.storage();
      const { workspace: a } = await seedWorkspace();
      const { workspace: b } = await seedWorkspace();
      expect(await storage.enrollTokens.find(a.id)).toBeNull();
      const first = anEnrollToken(a.id);
      await storage.enrollTokens.replace(first);
      expect(await storage.enrollTokens.find(a.id)).toEqual(first);
      expect(await storage.enrollTokens.findByTokenHash(first.tokenHash)).toEqual(first);
      expect(await storage.enrollTokens.find(b.id)).toBeNull();
      // An expired token is still found by hash: the caller decides what expired means.
      const second = anEnrollToken(a.id, { expiresAt: at(0) });
      await storage.enrollTokens.replace(second);
      expect(await storage.enrollTokens.findByTokenHash(first.tokenHash)).toBeNull();
      expect(await storage.enrollTokens.findByTokenHash(second.tokenHash)).toEqual(second);
      expect(await storage.enrollTokens.delete(b.id)).toBe(false);
      expect(await storage.enrollTokens.delete(a.id)).toBe(true);
      expect(await storage.enrollTokens.delete(a.id)).toBe(false);
      expect(await storage.enrollTokens.findByTokenHash(second.tokenHash)).toBeNull();
    });

    test("enrollTokens: a hash is unique across workspaces; the token goes with its workspace", async () => {
      const storage = ctx.storage();
      const { workspace: a } = await seedWorkspace();
      const { workspace: b } = await seedWorkspace();
      const token = anEnrollToken(a.id);
      await storage.enrollTokens.replace(token);
      await expectUnique(
        storage.enrollTokens.replace(anEnrollToken(b.id, { tokenHash: token.tokenHash })),
        "daemon_enroll_tokens.token_hash",
      );
      expect(await storage.enrollTokens.find(b.id)).toBeNull();
      await storage.workspaces.delete(a.id);
      expect(await storage.enrollTokens.findByTokenHash(token.tokenHash)).toBeNull();
    });
  });
}
