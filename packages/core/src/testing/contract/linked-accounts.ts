import { describe, expect } from "vitest";
import type { LinkedAccountRecord } from "../../storage/linked-accounts.js";
import type { UserRecord } from "../../storage/users.js";
import { aUser, type ContractContext, expectUnique, timeline, uid } from "./fixtures.js";

export function runLinkedAccountContract(ctx: ContractContext): void {
  linkedAccounts(ctx);
}

function linkedAccounts(ctx: ContractContext): void {
  const { test } = ctx;

  const at = timeline(Date.UTC(2025, 6, 1, 8, 0, 0, 321));

  function aLinkedAccount(userId: string, overrides: Partial<LinkedAccountRecord> = {}): LinkedAccountRecord {
    return {
      userId,
      provider: `github-${uid().slice(0, 8)}`,
      providerId: uid(),
      providerEmail: "ada@users.noreply.example.com",
      providerUsername: "ada",
      protocol: "oauth",
      createdAt: at(50, 9),
      ...overrides,
    };
  }

  const storage = () => ctx.storage();

  const newUser = async (overrides: Partial<UserRecord> = {}) => {
    const user = aUser(overrides);
    await storage().users.insert(user);
    return user;
  };

  describe("accounts: linked accounts, throttles, nonces", () => {
    test("linkedAccounts: list and delete by provider; one link per provider and identity", async () => {
      const user = await newUser();
      const other = await newUser();
      const github = aLinkedAccount(user.id, { provider: "github", createdAt: at(1) });
      const google = aLinkedAccount(user.id, { provider: "google", protocol: "oidc", createdAt: at(2) });
      await storage().linkedAccounts.insert(google);
      await storage().linkedAccounts.insert(github);
      expect(await storage().linkedAccounts.listByUser(user.id)).toEqual([github, google]);
      await expectUnique(
        storage().linkedAccounts.insert(aLinkedAccount(user.id, { provider: "github" })),
        "linked_accounts.provider",
      );
      await expectUnique(
        storage().linkedAccounts.insert(
          aLinkedAccount(other.id, { provider: "github", providerId: github.providerId }),
        ),
        "linked_accounts.provider_id",
      );
      expect(await storage().linkedAccounts.delete(other.id, "github")).toBe(false);
      expect(await storage().linkedAccounts.delete(user.id, "github")).toBe(true);
      expect(await storage().linkedAccounts.listByUser(user.id)).toEqual([google]);
    });
  });
}
