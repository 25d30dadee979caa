/**
 * The storage contract of server secrets and sealed values: insert-if-absent under races, listing
 * and re-sealing. Registered by `runStorageContract`.
 *
 * @module
 */
import { describe, expect } from "vitest";
import { anAuthority, aSecret, at, type ContractContext, uid } from "./fixtures.js";

export function runSecretContract(ctx: ContractContext): void {
  const { test, seedWorkspace } = ctx;
  const storage = () => ctx.storage();

  describe("secrets", () => {
    test("secrets: find is null until stored; insertIfAbsent keeps the first secret", async () => {
      const first = aSecret();
      expect(await storage().secrets.find(first.name)).toBeNull();
      const stored = await storage().secrets.insertIfAbsent(first);
      expect(stored).toEqual(first);
      expect(stored.sealed).toBeInstanceOf(Uint8Array);
      const second = { ...aSecret(), name: first.name };
      expect(await storage().secrets.insertIfAbsent(second)).toEqual(first);
      expect(await storage().secrets.find(first.name)).toEqual(first);
    });

    test("secrets: concurrent insertIfAbsent calls all return the same secret", async () => {
      const name = `signing-key-${uid()}`;
      const candidates = Array.from({ length: 20 }, (_, i) =>
        aSecret({ name, sealed: new Uint8Array([i, i, i]), createdAt: at(i) }),
      );
      const results = await Promise.all(candidates.map((c) => storage().secrets.insertIfAbsent(c)));
      const winner = results[0];
      expect(candidates).toContainEqual(winner);
      for (const r of results) expect(r).toEqual(winner);
      expect(await storage().secrets.find(name)).toEqual(winner);
    });
  });

  describe("sealedValues", () => {
    test("sealedValues: listAll leaves out authorities whose key is in a PKCS#11 token (nothing sealed to re-seal)", async () => {
      const { workspace } = await seedWorkspace();
      const software = anAuthority(workspace.id);
      const inToken = anAuthority(workspace.id, {
        keyStorage: "pkcs11",
        sealedPrivateKey: new TextEncoder().encode("pkcs11:object=wap-ca-2-v1;id=%01;type=private"),
      });
      for (const ca of [software, inToken]) await storage().certificateAuthorities.insert(ca);
      const caIds = (await storage().sealedValues.listAll()).flatMap((value) =>
        value.ref.kind === "ca_key" ? [value.ref.caId] : [],
      );
      expect(caIds).toContain(software.id);
      expect(caIds).not.toContain(inToken.id);
      expect((await storage().certificateAuthorities.findById(workspace.id, inToken.id))?.keyStorage).toBe(
        "pkcs11",
      );
    });

    test("sealedValues: listAll finds every CA key and secret; replace swaps one, matching the key version", async () => {
      const { workspace } = await seedWorkspace();
      const ca = anAuthority(workspace.id, { keyVersion: 3 });
      await storage().certificateAuthorities.insert(ca);
      const secret = aSecret();
      await storage().secrets.insertIfAbsent(secret);
      const all = await storage().sealedValues.listAll();
      const caRef = { kind: "ca_key", caId: ca.id, keyVersion: 3 } as const;
      expect(all).toContainEqual({ ref: caRef, sealed: ca.sealedPrivateKey });
      expect(all).toContainEqual({ ref: { kind: "secret", name: secret.name }, sealed: secret.sealed });

      const resealed = new Uint8Array([9, 8, 7]);
      expect(await storage().sealedValues.replace({ ...caRef, keyVersion: 2 }, resealed)).toBe(false);
      expect(await storage().sealedValues.replace({ ...caRef, caId: uid() }, resealed)).toBe(false);
      expect(
        (await storage().certificateAuthorities.findById(workspace.id, ca.id))?.sealedPrivateKey,
      ).toEqual(ca.sealedPrivateKey);
      expect(await storage().sealedValues.replace(caRef, resealed)).toBe(true);
      expect(
        (await storage().certificateAuthorities.findById(workspace.id, ca.id))?.sealedPrivateKey,
      ).toEqual(resealed);
      expect(await storage().sealedValues.replace({ kind: "secret", name: secret.name }, resealed)).toBe(
        true,
      );
      expect((await storage().secrets.find(secret.name))?.sealed).toEqual(resealed);
    });

    test("sealedValues: a replacement inside a rolled-back transaction leaves the old value", async () => {
      const secret = aSecret();
      await storage().secrets.insertIfAbsent(secret);
      await expect(
        storage().transaction(async (tx) => {
          await tx.sealedValues.replace({ kind: "secret", name: secret.name }, new Uint8Array([1]));
          throw new Error("abandon");
        }),
      ).rejects.toThrow("abandon");
      expect((await storage().secrets.find(secret.name))?.sealed).toEqual(secret.sealed);
    });
  });
}
