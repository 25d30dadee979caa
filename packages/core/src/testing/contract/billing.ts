/**
 * The storage contract of billing accounts and workspace usage counts. Registered by
 * `runStorageContract`.
 *
 * @module
 */
import { describe, expect } from "vitest";
import {
  aBillingAccount,
  aMember,
  anAuthority,
  aServiceAccount,
  aUser,
  type ContractContext,
  expectUnique,
  ssoAt,
  tag,
  uid,
} from "./fixtures.js";

export function runBillingContract(ctx: ContractContext): void {
  billingAccounts(ctx);
  usage(ctx);
}

function billingAccounts(ctx: ContractContext): void {
  const { test, seedWorkspace } = ctx;

  const at = ssoAt;

  const storage = () => ctx.storage();

  describe("billing accounts", () => {
    test("billingAccounts: upsert round-trips; find by workspace and by customer", async () => {
      const { workspace } = await seedWorkspace();
      const account = aBillingAccount(workspace.id, { currentPeriodEnd: null });
      await storage().billingAccounts.upsert(account);
      expect(await storage().billingAccounts.find(workspace.id)).toEqual(account);
      expect(await storage().billingAccounts.findByCustomer("stripe", account.customerId)).toEqual(account);
      expect(await storage().billingAccounts.findByCustomer("paddle", account.customerId)).toBeNull();
      const updated = aBillingAccount(workspace.id, {
        customerId: account.customerId,
        status: "canceled",
        cancelAtPeriodEnd: true,
        stateAt: at(90, 1),
        createdAt: at(90, 2),
        updatedAt: at(90, 3),
      });
      await storage().billingAccounts.upsert(updated);
      expect(await storage().billingAccounts.find(workspace.id)).toEqual({
        ...updated,
        createdAt: account.createdAt,
      });
    });

    test("billingAccounts: a customer belongs to one workspace", async () => {
      const a = await seedWorkspace();
      const b = await seedWorkspace();
      const account = aBillingAccount(a.workspace.id);
      await storage().billingAccounts.upsert(account);
      await expectUnique(
        storage().billingAccounts.upsert(aBillingAccount(b.workspace.id, { customerId: account.customerId })),
        "billing_accounts.customer_id",
      );
      expect(await storage().billingAccounts.find(b.workspace.id)).toBeNull();
    });
  });
}

function usage(ctx: ContractContext): void {
  const { test, seedWorkspace } = ctx;

  const at = ssoAt;

  const storage = () => ctx.storage();

  describe("sso directory and usage", () => {
    test("workspaceUsage: counts members, teams, service accounts, targets and authorities", async () => {
      const { workspace } = await seedWorkspace();
      const other = await seedWorkspace();
      const user = aUser();
      await storage().users.insert(user);
      await storage().members.insert(aMember(workspace.id, user.id));
      const ca = anAuthority(workspace.id);
      await storage().certificateAuthorities.insert(ca);
      await storage().certificateAuthorities.insert(anAuthority(workspace.id));
      for (let i = 0; i < 3; i++) await storage().serviceAccounts.insert(aServiceAccount(workspace.id));
      await storage().targets.insert({
        id: uid(),
        workspaceId: workspace.id,
        caId: ca.id,
        daemonId: null,
        name: `web-${tag()}`,
        description: "",
        tags: [],
        endpoints: [],
        metadata: {},
        createdAt: at(0),
        updatedAt: at(0),
      });
      await storage().teams.insert({
        id: uid(),
        workspaceId: workspace.id,
        name: `team-${tag()}`,
        description: "",
        tags: [],
        createdAt: at(0),
        updatedAt: at(0),
      });
      expect(await storage().workspaceUsage.counts(workspace.id)).toEqual({
        members: 2,
        teams: 1,
        serviceAccounts: 3,
        targets: 1,
        certificateAuthorities: 2,
      });
      expect(await storage().workspaceUsage.counts(other.workspace.id)).toEqual({
        members: 1,
        teams: 0,
        serviceAccounts: 0,
        targets: 0,
        certificateAuthorities: 0,
      });
      expect(await storage().workspaceUsage.counts(uid())).toEqual({
        members: 0,
        teams: 0,
        serviceAccounts: 0,
        targets: 0,
        certificateAuthorities: 0,
      });
    });
  });
}
