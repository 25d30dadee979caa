/**
 * The storage contract of linked accounts: one link per provider and identity. Registered by
 * `runStorageContract`.
 *
 * @module
 */
import { describe, expect } from "vitest";
import { accountAt, aLinkedAccount, type ContractContext, expectUnique, newUser } from "./fixtures.js";

export function runLinkedAccountContract(ctx: ContractContext): void {
  linkedAccounts(ctx);
}

function linkedAccounts(ctx: ContractContext): void {
  const { test } = ctx;

  const at = accountAt;

  const storage = () => ctx.storage();

  describe("accounts: linked accounts, throttles, nonces", () => {
    test("linkedAccounts: list and delete by provider; one link per provider and identity", async () => {
      const user = await newUser(ctx);
      const other = await newUser(ctx);
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
