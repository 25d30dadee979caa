/**
 * The storage contract: one vitest suite that every storage adapter runs. It proves the rules
 * written in the JSDoc of `@wap/core/storage` (null for not found, tenant isolation, uniqueness,
 * transactions, atomic one-time operations, cascades, paging and filters).
 *
 * Tests never assume an empty database: every row they write has fresh ids and names, so an
 * adapter may hand out the same database to every test.
 *
 * @module
 */
import * as fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Repositories, Storage } from "../storage/storage.js";
import { runAccessRequestContract } from "./contract/access-requests.js";
import { runAuditContract } from "./contract/audit.js";
import { runAuditChainContract } from "./contract/audit-chain.js";
import { runBackupCodeContract } from "./contract/backup-codes.js";
import { runBillingContract } from "./contract/billing.js";
import { runCertificateAuthorityContract } from "./contract/certificate-authorities.js";
import { runIssuedCertificateContract } from "./contract/certificates.js";
import { runDaemonSessionContract } from "./contract/daemon-sessions.js";
import { runDaemonRecordContract } from "./contract/daemons.js";
import { runDeviceContract } from "./contract/devices.js";
import { runDomainContract } from "./contract/domains.js";
import { runEnrollTokenContract } from "./contract/enroll-tokens.js";
import {
  aDaemon,
  aMember,
  anAuditEvent,
  anAuthority,
  aServiceAccount,
  at,
  aUser,
  aWorkspace,
  expectUnique,
  rejection,
  uid,
  unicodeText,
} from "./contract/fixtures.js";
import { runInviteContract } from "./contract/invites.js";
import { runLinkedAccountContract } from "./contract/linked-accounts.js";
import { runLoginThrottleContract } from "./contract/login-throttles.js";
import { runMemberContract } from "./contract/members.js";
import { runOneTimeTokenContract } from "./contract/one-time-tokens.js";
import { runPasskeyContract } from "./contract/passkeys.js";
import { runPrincipalContract } from "./contract/principals.js";
import { runRecordingContract } from "./contract/recordings.js";
import { runRequestNonceContract } from "./contract/request-nonces.js";
import { runSecretContract } from "./contract/secrets.js";
import { runServiceAccountContract } from "./contract/service-accounts.js";
import { runSessionContract } from "./contract/sessions.js";
import { runSshSessionContract } from "./contract/ssh-sessions.js";
import { runSsoContract } from "./contract/sso.js";
import { runTargetContract } from "./contract/targets.js";
import { runTeamContract } from "./contract/teams.js";
import { runUserContract } from "./contract/users.js";
import { runWebhookContract } from "./contract/webhooks.js";
import { runWorkspaceContract } from "./contract/workspaces.js";

/** How an adapter's test file wires the contract. */
export interface StorageContractOptions {
  /** Shown in the suite name, e.g. "sqlite (:memory:)". */
  readonly name: string;
  /**
   * A ready storage, created with the adapter's `strictTransactions` on; called before every
   * test, and closed after it.
   */
  readonly create: () => Promise<Storage>;
  /** Known gaps: tests (by exact name) the adapter does not pass, and why. Unknown names fail. */
  readonly skip?: ReadonlyArray<{ readonly reason: string; readonly tests: readonly string[] }>;
}

// --- the suite -------------------------------------------------------------------------------

/**
 * Registers the storage contract suite.
 *
 * @example
 * ```ts
 * runStorageContract({
 *   name: "sqlite",
 *   create: () => createSqliteStorage({ filename: ":memory:", strictTransactions: true }),
 * });
 * ```
 */
export function runStorageContract(options: StorageContractOptions): void {
  const skipped = new Map<string, string>();
  for (const gap of options.skip ?? []) for (const name of gap.tests) skipped.set(name, gap.reason);
  const registered = new Set<string>();

  describe(`storage contract: ${options.name}`, () => {
    let storage: Storage;
    beforeEach(async () => {
      storage = await options.create();
    });
    afterEach(async () => {
      await storage?.close();
    });

    const test = (name: string, fn: () => Promise<void>, timeout?: number) => {
      if (registered.has(name)) throw new Error(`duplicate contract test name: ${name}`);
      registered.add(name);
      const reason = skipped.get(name);
      if (reason === undefined) it(name, fn, timeout);
      else it.skip(`${name} (skipped: ${reason})`, fn);
    };

    /** A user, a workspace it created and its owner membership. */
    async function seedWorkspace(s: Repositories = storage) {
      const user = aUser();
      await s.users.insert(user);
      const workspace = aWorkspace(user.id);
      await s.workspaces.insert(workspace);
      const member = aMember(workspace.id, user.id, { role: "owner" });
      await s.members.insert(member);
      return { user, workspace, member };
    }

    // One part per resource, then the parts that cross resources.
    const context = { storage: () => storage, test, seedWorkspace };
    runUserContract(context);
    runSessionContract(context);
    runWorkspaceContract(context);
    runMemberContract(context);
    runCertificateAuthorityContract(context);
    runServiceAccountContract(context);
    runDaemonRecordContract(context);
    runAuditContract(context);
    runAuditChainContract(context);
    runSecretContract(context);
    runOneTimeTokenContract(context);
    runPasskeyContract(context);
    runBackupCodeContract(context);
    runDeviceContract(context);
    runLinkedAccountContract(context);
    runLoginThrottleContract(context);
    runRequestNonceContract(context);
    runTargetContract(context);
    runIssuedCertificateContract(context);
    runEnrollTokenContract(context);
    runDaemonSessionContract(context);
    runSshSessionContract(context);
    runSsoContract(context);
    runBillingContract(context);
    runInviteContract(context);
    runDomainContract(context);
    runTeamContract(context);
    runPrincipalContract(context);
    runAccessRequestContract(context);
    runWebhookContract(context);
    runRecordingContract({ ...context, expectUnique });

    describe("transactions", () => {
      test("transaction: commits when the callback resolves and returns its value", async () => {
        const result = await storage.transaction(async (tx) => {
          const seeded = await seedWorkspace(tx);
          // Reads inside see the transaction's own writes.
          expect(await tx.workspaces.findById(seeded.workspace.id)).toEqual(seeded.workspace);
          return seeded;
        });
        expect(await storage.workspaces.findById(result.workspace.id)).toEqual(result.workspace);
        expect(await storage.members.find(result.workspace.id, result.user.id)).toEqual(result.member);
      });

      test("transaction: a throw rolls back every write and rethrows the same error", async () => {
        const { workspace } = await seedWorkspace();
        const user = aUser();
        const ca = anAuthority(workspace.id);
        const boom = new Error("boom");
        const error = await rejection(
          storage.transaction(async (tx) => {
            await tx.users.insert(user);
            await tx.certificateAuthorities.insert(ca);
            await tx.workspaces.update(workspace.id, { name: "changed" }, at(1));
            await tx.auditEvents.append(anAuditEvent(workspace.id));
            throw boom;
          }),
        );
        expect(error).toBe(boom);
        expect(await storage.users.findById(user.id)).toBeNull();
        expect(await storage.certificateAuthorities.findById(workspace.id, ca.id)).toBeNull();
        expect(await storage.workspaces.findById(workspace.id)).toEqual(workspace);
        expect((await storage.auditEvents.list(workspace.id, { limit: 10, offset: 0 })).total).toBe(0);
      });

      test("transaction: a UniqueViolationError rolls back the transaction's earlier writes", async () => {
        const { workspace } = await seedWorkspace();
        const existing = anAuthority(workspace.id);
        await storage.certificateAuthorities.insert(existing);
        const account = aServiceAccount(workspace.id);
        await expectUnique(
          storage.transaction(async (tx) => {
            await tx.serviceAccounts.insert(account);
            await tx.certificateAuthorities.insert(anAuthority(workspace.id, { name: existing.name }));
          }),
          "certificate_authorities.name",
        );
        expect(await storage.serviceAccounts.findById(workspace.id, account.id)).toBeNull();
      });

      test("transaction: a caught UniqueViolationError leaves the transaction usable", async () => {
        const { workspace } = await seedWorkspace();
        const existing = anAuthority(workspace.id);
        await storage.certificateAuthorities.insert(existing);
        const before = aServiceAccount(workspace.id);
        const after = aServiceAccount(workspace.id);
        const clash = anAuthority(workspace.id, { name: existing.name });
        await storage.transaction(async (tx) => {
          await tx.serviceAccounts.insert(before);
          await expectUnique(tx.certificateAuthorities.insert(clash), "certificate_authorities.name");
          await tx.serviceAccounts.insert(after);
        });
        expect(await storage.serviceAccounts.findById(workspace.id, before.id)).toEqual(before);
        expect(await storage.serviceAccounts.findById(workspace.id, after.id)).toEqual(after);
        expect(await storage.certificateAuthorities.findById(workspace.id, clash.id)).toBeNull();
      });

      test("transaction: a nested transaction runs in the outer one", async () => {
        const { workspace } = await seedWorkspace();
        const outerAccount = aServiceAccount(workspace.id);
        const innerAccount = aServiceAccount(workspace.id);
        const boom = new Error("outer fails after the nested one succeeded");
        const error = await rejection(
          storage.transaction(async (tx) => {
            await tx.serviceAccounts.insert(outerAccount);
            await storage.transaction(async (inner) => {
              // The nested transaction sees the outer one's uncommitted write.
              expect(await inner.serviceAccounts.findById(workspace.id, outerAccount.id)).toEqual(
                outerAccount,
              );
              await inner.serviceAccounts.insert(innerAccount);
            });
            expect(await tx.serviceAccounts.findById(workspace.id, innerAccount.id)).toEqual(innerAccount);
            throw boom;
          }),
        );
        expect(error).toBe(boom);
        expect(await storage.serviceAccounts.findById(workspace.id, outerAccount.id)).toBeNull();
        expect(await storage.serviceAccounts.findById(workspace.id, innerAccount.id)).toBeNull();

        await storage.transaction(async () => {
          await storage.transaction(async (inner) => {
            await inner.serviceAccounts.insert(innerAccount);
          });
        });
        expect(await storage.serviceAccounts.findById(workspace.id, innerAccount.id)).toEqual(innerAccount);
      });

      test("transaction: a nested transaction that throws rolls back only its own writes", async () => {
        const { workspace } = await seedWorkspace();
        const outerAccount = aServiceAccount(workspace.id);
        const innerAccount = aServiceAccount(workspace.id);
        const boom = new Error("inner");
        await storage.transaction(async (tx) => {
          await tx.serviceAccounts.insert(outerAccount);
          const error = await rejection(
            storage.transaction(async (inner) => {
              await inner.serviceAccounts.insert(innerAccount);
              throw boom;
            }),
          );
          expect(error).toBe(boom);
          expect(await tx.serviceAccounts.findById(workspace.id, innerAccount.id)).toBeNull();
        });
        expect(await storage.serviceAccounts.findById(workspace.id, outerAccount.id)).toEqual(outerAccount);
        expect(await storage.serviceAccounts.findById(workspace.id, innerAccount.id)).toBeNull();
      });

      test("transaction: a call on the storage itself inside a transaction fails instead of running", async () => {
        // The suite's storages are created with strictTransactions, where adapters refuse the
        // call (the caller meant `tx`) rather than let it read as if it ran outside the
        // transaction. It must fail promptly, not wait for a connection the transaction holds.
        const { workspace } = await seedWorkspace();
        const account = aServiceAccount(workspace.id);
        const refusals = await storage.transaction(async (tx) => {
          await tx.serviceAccounts.insert(account);
          const outcomes = await Promise.allSettled([
            storage.workspaces.findById(workspace.id),
            storage.auditEvents.append(anAuditEvent(workspace.id)),
            storage.transaction(() => storage.serviceAccounts.findById(workspace.id, account.id)),
          ]);
          // The transaction's own handle still works after the refusals.
          expect(await tx.serviceAccounts.findById(workspace.id, account.id)).toEqual(account);
          return outcomes;
        });
        for (const outcome of refusals) {
          expect(outcome.status).toBe("rejected");
          expect(String((outcome as PromiseRejectedResult).reason)).toMatch(
            /inside storage\.transaction\(\)/,
          );
        }
        expect(await storage.serviceAccounts.findById(workspace.id, account.id)).toEqual(account);
        expect((await storage.auditEvents.list(workspace.id, { limit: 10, offset: 0 })).total).toBe(0);
      });

      test("transaction: another caller's calls while a transaction runs are not refused", async () => {
        const { workspace } = await seedWorkspace();
        const account = aServiceAccount(workspace.id);
        let release = () => {};
        const held = new Promise<void>((resolve) => {
          release = resolve;
        });
        let entered = () => {};
        const inside = new Promise<void>((resolve) => {
          entered = resolve;
        });
        const running = storage.transaction(async (tx) => {
          await tx.serviceAccounts.insert(account);
          entered();
          await held;
        });
        await inside;
        // Another caller's work is not the transaction's: it is neither refused nor joined.
        const other = storage.workspaces.findById(workspace.id);
        release();
        expect(await other).toEqual(workspace);
        await running;
        expect(await storage.serviceAccounts.findById(workspace.id, account.id)).toEqual(account);
      });

      test("transaction: concurrent transactions each commit or roll back on their own", async () => {
        const { workspace } = await seedWorkspace();
        const accounts = Array.from({ length: 10 }, () => aServiceAccount(workspace.id));
        const outcomes = await Promise.allSettled(
          accounts.map((account, i) =>
            storage.transaction(async (tx) => {
              await tx.serviceAccounts.insert(account);
              await tx.auditEvents.append(anAuditEvent(workspace.id));
              if (i % 2 === 1) throw new Error(`rollback ${i}`);
            }),
          ),
        );
        expect(outcomes.map((o) => o.status)).toEqual(
          accounts.map((_, i) => (i % 2 ? "rejected" : "fulfilled")),
        );
        for (const [i, account] of accounts.entries()) {
          const found = await storage.serviceAccounts.findById(workspace.id, account.id);
          expect(found).toEqual(i % 2 ? null : account);
        }
        expect((await storage.auditEvents.list(workspace.id, { limit: 100, offset: 0 })).total).toBe(5);
      });
    });

    describe("text and misc", () => {
      test("strings: arbitrary Unicode names, descriptions, tags and maps survive storage unchanged", async () => {
        const { workspace, user } = await seedWorkspace();
        await fc.assert(
          fc.asyncProperty(
            unicodeText(64),
            unicodeText(200),
            fc.array(unicodeText(16), { maxLength: 5 }),
            fc.dictionary(
              unicodeText(16).filter((k) => k !== "__proto__"),
              unicodeText(32),
              { maxKeys: 5, noNullPrototype: true },
            ),
            async (name, description, tags, metadata) => {
              const w = aWorkspace(user.id, { name, description });
              await storage.workspaces.insert(w);
              expect(await storage.workspaces.findById(w.id)).toEqual(w);
              // Names are unique per workspace: a suffix keeps runs apart.
              const account = aServiceAccount(workspace.id, {
                name: `${name}\u{1F511}${uid()}`,
                description,
                tags,
              });
              await storage.serviceAccounts.insert(account);
              expect(await storage.serviceAccounts.findById(workspace.id, account.id)).toEqual(account);
              const daemon = aDaemon(workspace.id, { name, metadata });
              await storage.daemons.insert(daemon);
              expect(await storage.daemons.findById(workspace.id, daemon.id)).toEqual(daemon);
            },
          ),
          { numRuns: 40 },
        );
      });

      test("strings: a query finds its account whatever the case of either side", async () => {
        const { workspace } = await seedWorkspace();
        await fc.assert(
          fc.asyncProperty(
            unicodeText(12).filter((s) => s.length > 0),
            async (word) => {
              const account = aServiceAccount(workspace.id, { name: `${uid()} ${word} end` });
              await storage.serviceAccounts.insert(account);
              for (const query of [word, word.toUpperCase(), word.toLowerCase()]) {
                // Only cases where folding is stable are meaningful (e.g. not "İ").
                if (query.toLowerCase() !== word.toLowerCase()) continue;
                const page = await storage.serviceAccounts.list(workspace.id, {
                  limit: 100,
                  offset: 0,
                  query,
                });
                expect(page.items.map((a) => a.id)).toContain(account.id);
              }
              await storage.serviceAccounts.delete(workspace.id, account.id);
            },
          ),
          { numRuns: 30 },
        );
      });

      test("ping resolves and capabilities are declared", async () => {
        await expect(storage.ping()).resolves.toBeUndefined();
        expect(typeof storage.capabilities.multiInstance).toBe("boolean");
      });
    });

    const unknown = [...skipped.keys()].filter((name) => !registered.has(name));
    if (unknown.length > 0) {
      throw new Error(`runStorageContract(${options.name}): skip names unknown tests: ${unknown.join("; ")}`);
    }
  });
}
