/**
 * The storage contract of certificate authorities: round-trips of every field, patches, the one-
 * default rule, deletion. Registered by `runStorageContract`.
 *
 * @module
 */
import { describe, expect } from "vitest";
import {
  anAuthority,
  aRetiredKey,
  at,
  type ContractContext,
  certificateAt,
  expectUnique,
  seedAuthority,
  uid,
} from "./fixtures.js";

export function runCertificateAuthorityContract(ctx: ContractContext): void {
  const { test, seedWorkspace } = ctx;
  const storage = () => ctx.storage();

  describe("certificate authorities", () => {
    test("certificateAuthorities: every field round-trips (bytes, maps, arrays, big numbers)", async () => {
      const { workspace } = await seedWorkspace();
      const ssh = anAuthority(workspace.id, { isDefault: true, description: "" });
      const x509 = anAuthority(workspace.id, {
        authorityType: "x509",
        keyType: "rsa",
        keyBits: 4096,
        certificate: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
        isActive: false,
        allowedKeyTypes: [],
        userExtensions: {},
        userCriticalOptions: { "force-command": "/bin/echo «hi» 👋", "": "empty key" },
        sealedPrivateKey: new Uint8Array(0),
        keyVersion: 7,
        createdAt: at(32),
      });
      const bigKey = anAuthority(workspace.id, {
        sealedPrivateKey: Uint8Array.from({ length: 4096 }, (_, i) => (i * 31) % 256),
        createdAt: at(33),
      });
      // A key in a PKCS#11 token: the row holds the key object's URI, for itself and its next key.
      const inToken = anAuthority(workspace.id, {
        keyStorage: "pkcs11",
        sealedPrivateKey: new TextEncoder().encode("pkcs11:object=wap-ca-1-v1;id=%0f%a3;type=private"),
        rotationPhase: "published",
        nextKey: {
          keyType: "ed25519",
          keyBits: 256,
          certificate: "",
          publicKey: "ssh-ed25519 AAAA",
          serialNumber: "",
          subject: "next",
          notBefore: at(34),
          notAfter: at(35),
          sealedPrivateKey: new TextEncoder().encode("pkcs11:object=wap-ca-1-v2;id=%10;type=private"),
        },
        createdAt: at(34),
      });
      for (const ca of [ssh, x509, bigKey, inToken]) await storage().certificateAuthorities.insert(ca);
      for (const ca of [ssh, x509, bigKey, inToken]) {
        const found = await storage().certificateAuthorities.findById(workspace.id, ca.id);
        expect(found).toEqual(ca);
        expect(found?.sealedPrivateKey).toBeInstanceOf(Uint8Array);
        expect(Array.from(found?.sealedPrivateKey ?? [])).toEqual(Array.from(ca.sealedPrivateKey));
      }
      expect(await storage().certificateAuthorities.list(workspace.id)).toEqual([ssh, x509, bigKey, inToken]);
    });

    test("certificateAuthorities: not found and another workspace's id find, change and delete nothing", async () => {
      const a = await seedWorkspace();
      const b = await seedWorkspace();
      const ca = anAuthority(a.workspace.id);
      await storage().certificateAuthorities.insert(ca);
      expect(await storage().certificateAuthorities.findById(a.workspace.id, uid())).toBeNull();
      expect(await storage().certificateAuthorities.findById(b.workspace.id, ca.id)).toBeNull();
      expect(await storage().certificateAuthorities.list(b.workspace.id)).toEqual([]);
      expect(
        await storage().certificateAuthorities.update(b.workspace.id, ca.id, { name: "hijacked" }, at(1)),
      ).toBeNull();
      await storage().certificateAuthorities.clearDefault(b.workspace.id, "ssh", at(1));
      expect(await storage().certificateAuthorities.delete(b.workspace.id, ca.id)).toBe(false);
      expect(await storage().certificateAuthorities.findById(a.workspace.id, ca.id)).toEqual(ca);
    });

    test("certificateAuthorities: update changes only the given fields", async () => {
      const { workspace } = await seedWorkspace();
      const ca = anAuthority(workspace.id);
      await storage().certificateAuthorities.insert(ca);
      const patch = {
        name: "renamed ✓",
        description: "",
        isActive: false,
        allowedKeyTypes: ["rsa" as const],
        lifetimeSeconds: 60,
        userDefaultTtlSeconds: 61,
        userMaxTtlSeconds: 62,
        hostDefaultTtlSeconds: 63,
        hostMaxTtlSeconds: 64,
        userExtensions: { "permit-X11-forwarding": "" },
        userCriticalOptions: {},
      };
      const updated = await storage().certificateAuthorities.update(workspace.id, ca.id, patch, at(99, 9));
      expect(updated).toEqual({ ...ca, ...patch, updatedAt: at(99, 9) });
      expect(await storage().certificateAuthorities.findById(workspace.id, ca.id)).toEqual(updated);
      const untouched = await storage().certificateAuthorities.update(workspace.id, ca.id, {}, at(100));
      expect(untouched).toEqual({ ...ca, ...patch, updatedAt: at(100) });
    });

    test("certificateAuthorities: duplicate name in a workspace throws and changes nothing", async () => {
      const a = await seedWorkspace();
      const b = await seedWorkspace();
      const ca = anAuthority(a.workspace.id);
      const other = anAuthority(a.workspace.id);
      await storage().certificateAuthorities.insert(ca);
      await storage().certificateAuthorities.insert(other);
      const clash = anAuthority(a.workspace.id, { name: ca.name });
      await expectUnique(storage().certificateAuthorities.insert(clash), "certificate_authorities.name");
      expect(await storage().certificateAuthorities.findById(a.workspace.id, clash.id)).toBeNull();
      await expectUnique(
        storage().certificateAuthorities.update(a.workspace.id, other.id, { name: ca.name }, at(1)),
        "certificate_authorities.name",
      );
      expect(await storage().certificateAuthorities.findById(a.workspace.id, other.id)).toEqual(other);
      // Names are unique per workspace only.
      const elsewhere = anAuthority(b.workspace.id, { name: ca.name });
      await storage().certificateAuthorities.insert(elsewhere);
      expect(await storage().certificateAuthorities.findById(b.workspace.id, elsewhere.id)).toEqual(
        elsewhere,
      );
    });

    test("certificateAuthorities: a second default without clearDefault fails with UniqueViolationError", async () => {
      const { workspace } = await seedWorkspace();
      const first = anAuthority(workspace.id, { isDefault: true });
      await storage().certificateAuthorities.insert(first);
      // One default per kind: an x509 default is fine next to an ssh one.
      const x509 = anAuthority(workspace.id, { authorityType: "x509", isDefault: true });
      await storage().certificateAuthorities.insert(x509);

      const second = anAuthority(workspace.id, { isDefault: true });
      await expectUnique(
        storage().certificateAuthorities.insert(second),
        "certificate_authorities.is_default",
      );
      expect(await storage().certificateAuthorities.findById(workspace.id, second.id)).toBeNull();

      const third = anAuthority(workspace.id);
      await storage().certificateAuthorities.insert(third);
      await expectUnique(
        storage().certificateAuthorities.update(workspace.id, third.id, { isDefault: true }, at(1)),
        "certificate_authorities.is_default",
      );
      expect(await storage().certificateAuthorities.findById(workspace.id, third.id)).toEqual(third);
      expect(await storage().certificateAuthorities.findById(workspace.id, first.id)).toEqual(first);
    });

    test("certificateAuthorities: clearDefault then set in one transaction moves the default", async () => {
      const a = await seedWorkspace();
      const b = await seedWorkspace();
      const first = anAuthority(a.workspace.id, { isDefault: true });
      const x509 = anAuthority(a.workspace.id, { authorityType: "x509", isDefault: true });
      const next = anAuthority(a.workspace.id);
      const otherWorkspace = anAuthority(b.workspace.id, { isDefault: true });
      for (const ca of [first, x509, next, otherWorkspace]) await storage().certificateAuthorities.insert(ca);

      await storage().transaction(async (tx) => {
        await tx.certificateAuthorities.clearDefault(a.workspace.id, "ssh", at(700, 1));
        await tx.certificateAuthorities.update(a.workspace.id, next.id, { isDefault: true }, at(700, 2));
      });
      expect(await storage().certificateAuthorities.findById(a.workspace.id, first.id)).toEqual({
        ...first,
        isDefault: false,
        updatedAt: at(700, 1),
      });
      expect((await storage().certificateAuthorities.findById(a.workspace.id, next.id))?.isDefault).toBe(
        true,
      );
      // Only that workspace and kind.
      expect(await storage().certificateAuthorities.findById(a.workspace.id, x509.id)).toEqual(x509);
      expect(await storage().certificateAuthorities.findById(b.workspace.id, otherWorkspace.id)).toEqual(
        otherWorkspace,
      );
    });

    test("certificateAuthorities: delete returns true once, then false", async () => {
      const { workspace } = await seedWorkspace();
      const ca = anAuthority(workspace.id);
      await storage().certificateAuthorities.insert(ca);
      expect(await storage().certificateAuthorities.delete(workspace.id, ca.id)).toBe(true);
      expect(await storage().certificateAuthorities.findById(workspace.id, ca.id)).toBeNull();
      expect(await storage().certificateAuthorities.delete(workspace.id, ca.id)).toBe(false);
    });
  });

  defaults(ctx);
  keyRollover(ctx);
}

function defaults(ctx: ContractContext): void {
  const { test, seedWorkspace } = ctx;

  const storage = () => ctx.storage();

  test("certificateAuthorities: findDefault finds the default of a kind in its workspace only", async () => {
    const { workspace } = await seedWorkspace();
    const b = await seedWorkspace();
    const s = storage().certificateAuthorities;
    expect(await s.findDefault(workspace.id, "ssh")).toBeNull();
    const plain = anAuthority(workspace.id);
    const ssh = anAuthority(workspace.id, { isDefault: true });
    const x509 = anAuthority(workspace.id, { authorityType: "x509", isDefault: true });
    for (const ca of [plain, ssh, x509]) await s.insert(ca);
    expect(await s.findDefault(workspace.id, "ssh")).toEqual(ssh);
    expect(await s.findDefault(workspace.id, "x509")).toEqual(x509);
    expect(await s.findDefault(b.workspace.id, "ssh")).toBeNull();
  });
}

function keyRollover(ctx: ContractContext): void {
  const { test, seedWorkspace } = ctx;

  const at = certificateAt;

  const storage = () => ctx.storage();

  describe("key rollover", () => {
    test("certificateAuthorities: replaceKey sets the key and the next version, only from the expected one", async () => {
      const { workspace, ca } = await seedAuthority(ctx, { keyVersion: 4 });
      const key = {
        keyType: "rsa" as const,
        keyBits: 3072,
        certificate: "-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----\n",
        publicKey: "ssh-rsa AAAAB3NzaC1yc2E=",
        serialNumber: "00ff",
        subject: "CN=renewed",
        notBefore: at(600, 1),
        notAfter: at(600 + 315_360_000, 2),
        sealedPrivateKey: new Uint8Array([7, 0, 255, 128]),
      };
      const s = storage().certificateAuthorities;
      expect(await s.replaceKey(workspace.id, ca.id, 3, key, at(601))).toBeNull();
      expect(await s.findById(workspace.id, ca.id)).toEqual(ca);
      const { workspace: elsewhere } = await seedWorkspace();
      expect(await s.replaceKey(elsewhere.id, ca.id, 4, key, at(601))).toBeNull();
      expect(await s.replaceKey(workspace.id, uid(), 4, key, at(601))).toBeNull();

      const replaced = await s.replaceKey(workspace.id, ca.id, 4, key, at(602, 5));
      expect(replaced).toEqual({ ...ca, ...key, keyVersion: 5, updatedAt: at(602, 5) });
      expect(await s.findById(workspace.id, ca.id)).toEqual(replaced);
    });

    test("certificateAuthorities: of concurrent replaceKey calls from one version, exactly one wins", async () => {
      const { workspace, ca } = await seedAuthority(ctx);
      const attempts = Array.from({ length: 8 }, (_, i) =>
        storage().transaction((tx) =>
          tx.certificateAuthorities.replaceKey(
            workspace.id,
            ca.id,
            1,
            { ...ca, publicKey: `ssh-ed25519 attempt-${i}` },
            at(700 + i),
          ),
        ),
      );
      const results = await Promise.all(attempts);
      const winners = results.filter((r) => r !== null);
      expect(winners).toHaveLength(1);
      expect((await storage().certificateAuthorities.findById(workspace.id, ca.id))?.publicKey).toBe(
        winners[0]?.publicKey,
      );
    });

    test("retiredAuthorityKeys: round-trip newest version first, one row per version, scoped and cascaded", async () => {
      const { workspace, ca } = await seedAuthority(ctx);
      const b = await seedAuthority(ctx);
      const v1 = aRetiredKey(ca);
      const v2 = aRetiredKey(ca, {
        version: 2,
        keyType: "rsa",
        keyBits: 4096,
        certificate: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
        serialNumber: "0a",
        retiredAt: at(900),
        trustedUntil: at(900 + 31_536_000, 9),
      });
      await storage().retiredAuthorityKeys.insert(v1);
      await storage().retiredAuthorityKeys.insert(v2);
      expect(await storage().retiredAuthorityKeys.list(workspace.id, ca.id)).toEqual([v2, v1]);
      await expectUnique(
        storage().retiredAuthorityKeys.insert(aRetiredKey(ca)),
        "certificate_authority_keys.version",
      );
      expect(await storage().retiredAuthorityKeys.list(b.workspace.id, ca.id)).toEqual([]);
      expect(await storage().retiredAuthorityKeys.list(workspace.id, b.ca.id)).toEqual([]);
      expect(await storage().certificateAuthorities.delete(workspace.id, ca.id)).toBe(true);
      expect(await storage().retiredAuthorityKeys.list(workspace.id, ca.id)).toEqual([]);
    });
  });
}
