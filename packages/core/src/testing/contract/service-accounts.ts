/**
 * The storage contract of service accounts: round-trips, patches, uniqueness, paging and filters.
 * Registered by `runStorageContract`.
 *
 * @module
 */
import { describe, expect } from "vitest";
import type { ServiceAccountRecord } from "../../storage/service-accounts.js";
import type { Storage } from "../../storage/storage.js";
import { aServiceAccount, at, type ContractContext, expectUnique, uid } from "./fixtures.js";

export function runServiceAccountContract(ctx: ContractContext): void {
  const { test, seedWorkspace } = ctx;
  const storage = () => ctx.storage();

  describe("service accounts", () => {
    test("serviceAccounts: every field round-trips; findByIdForAuthentication ignores the workspace", async () => {
      const { workspace } = await seedWorkspace();
      const account = aServiceAccount(workspace.id, {
        description: "",
        tags: [],
        expiresAt: null,
        lastUsedAt: at(41, 1),
      });
      const tagged = aServiceAccount(workspace.id, {
        tags: ["ünï", "a,b", 'quote"d', "%", ""],
        role: "viewer",
      });
      await storage().serviceAccounts.insert(account);
      await storage().serviceAccounts.insert(tagged);
      expect(await storage().serviceAccounts.findById(workspace.id, account.id)).toEqual(account);
      expect(await storage().serviceAccounts.findById(workspace.id, tagged.id)).toEqual(tagged);
      expect(await storage().serviceAccounts.findByIdForAuthentication(tagged.id)).toEqual(tagged);
      expect(await storage().serviceAccounts.findByIdForAuthentication(uid())).toBeNull();
      expect(await storage().serviceAccounts.findById(workspace.id, uid())).toBeNull();
    });

    test("serviceAccounts: another workspace's id finds, changes and deletes nothing", async () => {
      const a = await seedWorkspace();
      const b = await seedWorkspace();
      const account = aServiceAccount(a.workspace.id);
      await storage().serviceAccounts.insert(account);
      expect(await storage().serviceAccounts.findById(b.workspace.id, account.id)).toBeNull();
      expect(
        await storage().serviceAccounts.update(b.workspace.id, account.id, { role: "viewer" }, at(1)),
      ).toBeNull();
      expect(await storage().serviceAccounts.delete(b.workspace.id, account.id)).toBe(false);
      expect(await storage().serviceAccounts.list(b.workspace.id, { limit: 10, offset: 0 })).toEqual({
        items: [],
        total: 0,
      });
      expect(await storage().serviceAccounts.findById(a.workspace.id, account.id)).toEqual(account);
    });

    test("serviceAccounts: update, touchLastUsed and delete", async () => {
      const { workspace } = await seedWorkspace();
      const account = aServiceAccount(workspace.id);
      await storage().serviceAccounts.insert(account);
      const patch = { name: "Renamed Bot", description: "now ÜPPER", role: "viewer" as const, tags: ["x"] };
      const updated = await storage().serviceAccounts.update(workspace.id, account.id, patch, at(42, 1));
      expect(updated).toEqual({ ...account, ...patch, updatedAt: at(42, 1) });
      await storage().serviceAccounts.touchLastUsed(account.id, at(43, 2));
      expect(await storage().serviceAccounts.findById(workspace.id, account.id)).toEqual({
        ...updated,
        lastUsedAt: at(43, 2),
      });
      // The folded copy used by the query filter follows renames.
      const page = await storage().serviceAccounts.list(workspace.id, {
        limit: 10,
        offset: 0,
        query: "üpper",
      });
      expect(page.items.map((a) => a.id)).toEqual([account.id]);
      expect(await storage().serviceAccounts.update(workspace.id, uid(), { name: "x" }, at(1))).toBeNull();
      expect(await storage().serviceAccounts.delete(workspace.id, account.id)).toBe(true);
      expect(await storage().serviceAccounts.delete(workspace.id, account.id)).toBe(false);
      expect(await storage().serviceAccounts.findByIdForAuthentication(account.id)).toBeNull();
    });

    test("serviceAccounts: duplicate name in a workspace throws and changes nothing", async () => {
      const a = await seedWorkspace();
      const b = await seedWorkspace();
      const account = aServiceAccount(a.workspace.id);
      const other = aServiceAccount(a.workspace.id);
      await storage().serviceAccounts.insert(account);
      await storage().serviceAccounts.insert(other);
      const clash = aServiceAccount(a.workspace.id, { name: account.name });
      await expectUnique(storage().serviceAccounts.insert(clash), "service_accounts.name");
      expect(await storage().serviceAccounts.findByIdForAuthentication(clash.id)).toBeNull();
      await expectUnique(
        storage().serviceAccounts.update(a.workspace.id, other.id, { name: account.name }, at(1)),
        "service_accounts.name",
      );
      expect(await storage().serviceAccounts.findById(a.workspace.id, other.id)).toEqual(other);
      await storage().serviceAccounts.insert(aServiceAccount(b.workspace.id, { name: account.name }));
    });

    test("serviceAccounts: list pages oldest first with the total", async () => {
      const { workspace } = await seedWorkspace();
      const accounts = Array.from({ length: 7 }, (_, i) =>
        aServiceAccount(workspace.id, { name: `bot ${i}`, createdAt: at(1000 + i) }),
      );
      for (const a of [...accounts].reverse()) await storage().serviceAccounts.insert(a);
      const first = await storage().serviceAccounts.list(workspace.id, { limit: 3, offset: 0 });
      expect(first).toEqual({ items: accounts.slice(0, 3), total: 7 });
      const last = await storage().serviceAccounts.list(workspace.id, { limit: 3, offset: 6 });
      expect(last).toEqual({ items: accounts.slice(6), total: 7 });
      const beyond = await storage().serviceAccounts.list(workspace.id, { limit: 3, offset: 10 });
      expect(beyond).toEqual({ items: [], total: 7 });
    });

    test("serviceAccounts: list filters by query, role and every tag", async () => {
      const { workspace } = await seedWorkspace();
      const mk = (i: number, o: Partial<ServiceAccountRecord>) =>
        aServiceAccount(workspace.id, { description: "", tags: [], createdAt: at(2000 + i), ...o });
      const deploy = mk(0, { name: "Deploy-Bot", tags: ["ci", "prod"] });
      const backup = mk(1, {
        name: "backup",
        description: "Nightly DEPLOY of snapshots",
        role: "viewer",
        tags: ["prod"],
      });
      const ecole = mk(2, { name: "ÉCOLE sync", tags: ["ci"] });
      const literal = mk(3, { name: "100%_done", tags: ["ci", "prod", "eu"] });
      for (const a of [deploy, backup, ecole, literal]) await storage().serviceAccounts.insert(a);
      const ids = async (
        filter: Omit<Parameters<Storage["serviceAccounts"]["list"]>[1], "limit" | "offset">,
      ) => {
        const page = await storage().serviceAccounts.list(workspace.id, { limit: 100, offset: 0, ...filter });
        expect(page.total).toBe(page.items.length);
        return page.items.map((a) => a.id);
      };
      expect(await ids({ query: "deploy" })).toEqual([deploy.id, backup.id]);
      expect(await ids({ query: "école" })).toEqual([ecole.id]);
      // LIKE wildcards in the query are plain characters.
      expect(await ids({ query: "%" })).toEqual([literal.id]);
      expect(await ids({ query: "0%_d" })).toEqual([literal.id]);
      expect(await ids({ query: "_" })).toEqual([literal.id]);
      expect(await ids({ query: "nothing like it" })).toEqual([]);
      expect(await ids({ role: "viewer" })).toEqual([backup.id]);
      expect(await ids({ tags: ["prod"] })).toEqual([deploy.id, backup.id, literal.id]);
      expect(await ids({ tags: ["ci", "prod"] })).toEqual([deploy.id, literal.id]);
      expect(await ids({ tags: ["ci", "missing"] })).toEqual([]);
      expect(await ids({ tags: ["pro"] })).toEqual([]);
      expect(await ids({ tags: [] })).toEqual([deploy.id, backup.id, ecole.id, literal.id]);
      expect(await ids({ query: "o", role: "editor", tags: ["ci"] })).toEqual([
        deploy.id,
        ecole.id,
        literal.id,
      ]);
      const paged = await storage().serviceAccounts.list(workspace.id, {
        limit: 1,
        offset: 1,
        tags: ["prod"],
      });
      expect(paged).toEqual({ items: [backup], total: 3 });
    });
  });
}
