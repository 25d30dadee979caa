/**
 * RolloverCertificateAuthority: the new key signs at once, the old one stays trusted as long as
 * its certificates can live, key type and size can change, and refusals have precise codes.
 */
import { readFile } from "node:fs/promises";
import {
  AuthorityType,
  CertificateKeyType,
  CertificateService,
  SignSSHCertificateRequest_CertificateType as CertType,
  TrustedKeyRole,
} from "@wap/api";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { retiredKeysOf, x509TrustBundle } from "../src/certificates/issuance/trust.js";
import { publishedTrust } from "../src/certificates/publication.js";
import { retiredKeyTrustedUntil } from "../src/certificates/rollover.js";
import {
  createAuthority,
  duration,
  type Owner,
  run,
  scratch,
  sshKeygenList,
  subjectKey,
} from "./support/certificates.js";
import { createTestPlatform, expectCode, type TestPlatform } from "./support.js";

let files: Awaited<ReturnType<typeof scratch>>;
beforeAll(async () => {
  files = await scratch();
});
afterAll(() => files.remove());

let t: TestPlatform;
let ada: Owner;
beforeEach(async () => {
  t = await createTestPlatform();
  ada = await t.owner();
});
afterEach(() => t.platform.close());

const rollover = (id: string, request: Record<string, unknown> = {}, caller = ada.caller) =>
  t.call(caller, CertificateService.method.rolloverCertificateAuthority, {
    workspaceId: ada.workspaceId,
    id,
    ...request,
  });

const userSign = async (caId: string, ttl?: number) =>
  t.call(ada.caller, CertificateService.method.signSSHCertificate, {
    workspaceId: ada.workspaceId,
    caId,
    type: CertType.USER,
    publicKey: (await subjectKey({ type: "ed25519" })).line,
    ...(ttl === undefined ? {} : { ttl: duration(ttl) }),
  });

describe("RolloverCertificateAuthority", () => {
  it("replaces the key, signs with the new one at once, and keeps the old one trusted", async () => {
    const ca = await createAuthority(
      t,
      ada,
      { type: "ed25519" },
      { userMaxTtl: duration(7200), hostMaxTtl: duration(86_400) },
    );
    const before = await userSign(ca.id, 3600);
    t.clock.advance(60_000);
    const { certificateAuthority: rolled } = await rollover(ca.id);
    expect(rolled).toMatchObject({
      id: ca.id,
      name: ca.name,
      keyType: CertificateKeyType.ED25519,
      isDefault: true,
    });
    expect(rolled!.publicKey).not.toBe(ca.publicKey);
    expect(Number(rolled!.notBefore?.seconds)).toBeGreaterThan(Number(ca.notBefore?.seconds));

    const after = await userSign(ca.id);
    const [oldCert, newCert] = await Promise.all([
      sshKeygenList(files, before.signedCertificate),
      sshKeygenList(files, after.signedCertificate),
    ]);
    expect(oldCert.signingCa).not.toBe(newCert.signingCa);
    expect(after.caPublicKey.split("\n")).toEqual([rolled!.publicKey, ca.publicKey]);
    const entry = await t.storage.issuedCertificates.findBySerial(ada.workspaceId, ca.id, newCert.serial);
    expect(entry?.caKeyVersion).toBe(2);

    const stored = await t.storage.certificateAuthorities.findById(ada.workspaceId, ca.id);
    const [retired] = await retiredKeysOf(t.platform.services, t.storage, stored!);
    // Until the longest certificate the old key could still be signing when it was replaced expires.
    expect(retired).toMatchObject({ version: 1, publicKey: ca.publicKey, retiredAt: t.clock.now() });
    expect(retired!.trustedUntil).toEqual(new Date(t.clock.now().getTime() + 86_400_000));

    // GetCertificateAuthority lists both, with their roles and until when; the anonymous
    // endpoint serves the same keys as the lines sshd and known_hosts take.
    const get = async () =>
      (
        await t.call(ada.caller, CertificateService.method.getCertificateAuthority, {
          workspaceId: ada.workspaceId,
          id: ca.id,
        })
      ).certificateAuthority!;
    const listed = (await get()).trustedKeys;
    expect(
      listed.map((k) => [k.role, k.publicKey, k.signsUserCertificates, k.signsHostCertificates]),
    ).toEqual([
      [TrustedKeyRole.CURRENT, rolled!.publicKey, true, true],
      [TrustedKeyRole.RETIRED, ca.publicKey, false, false],
    ]);
    expect(Number(listed[0]!.trustedUntil?.seconds)).toBe(Number(rolled!.notAfter?.seconds));
    expect(Number(listed[1]!.trustedUntil?.seconds) * 1000).toBe(retired!.trustedUntil.getTime());
    expect((await get()).trustUrl).toBe(
      `${t.platform.services.config.publicBaseUrl.replace(/\/+$/, "")}/v1/trust/${ca.id}`,
    );
    const published = (document: "user_ca_keys" | "known_hosts", hosts?: string) =>
      publishedTrust(t.platform.services, ca.id, document, { hosts }).then((p) => p?.body);
    expect(await published("user_ca_keys")).toBe(`${rolled!.publicKey}\n${ca.publicKey}\n`);
    expect(await published("known_hosts", "*.corp.example.com,10.0.0.*")).toBe(
      `@cert-authority *.corp.example.com,10.0.0.* ${rolled!.publicKey}\n@cert-authority *.corp.example.com,10.0.0.* ${ca.publicKey}\n`,
    );
    expect(await published("user_ca_keys")).toBe(`${after.caPublicKey}\n`);

    // Once that has passed, only the signing key is listed.
    t.clock.advance(86_400_000);
    expect((await userSign(ca.id)).caPublicKey).toBe(rolled!.publicKey);
    expect((await get()).trustedKeys.map((k) => k.role)).toEqual([TrustedKeyRole.CURRENT]);
    expect(await published("user_ca_keys")).toBe(`${rolled!.publicKey}\n`);

    const audit = await t.storage.auditEvents.list(ada.workspaceId, {
      limit: 10,
      offset: 0,
      action: "certificate_authority.rollover",
    });
    expect(audit.items.map((e) => e.resource)).toEqual([`certificate_authority:${ca.id}`]);
  });

  it("trusts a retired key until its last recorded certificate expires, never past its own end", () => {
    const now = new Date("2030-01-01T00:00:00Z");
    const ca = {
      userMaxTtlSeconds: 3600,
      hostMaxTtlSeconds: 7200,
      notAfter: new Date("2030-06-01T00:00:00Z"),
    } as Parameters<typeof retiredKeyTrustedUntil>[0];
    expect(retiredKeyTrustedUntil(ca, null, now)).toEqual(new Date("2030-01-01T02:00:00Z"));
    // A certificate signed before the maximum was lowered outlives the current maximum.
    expect(retiredKeyTrustedUntil(ca, new Date("2030-02-01T00:00:00Z"), now)).toEqual(
      new Date("2030-02-01T00:00:00Z"),
    );
    expect(retiredKeyTrustedUntil(ca, new Date("2031-01-01T00:00:00Z"), now)).toEqual(ca.notAfter);
  });

  it("changes the key type and size on request; invalid sizes are invalid_argument and change nothing", async () => {
    const ca = await createAuthority(t, ada, { type: "ed25519" });
    await expectCode(
      rollover(ca.id, { keyType: CertificateKeyType.ECDSA, keyBits: 255 }),
      "invalid_argument",
    );
    await expectCode(rollover(ca.id, { keyBits: 512 }), "invalid_argument");
    await expectCode(rollover(ca.id, { keyType: 9 }), "invalid_argument");
    expect((await t.storage.certificateAuthorities.findById(ada.workspaceId, ca.id))?.keyVersion).toBe(1);
    const { certificateAuthority: rolled } = await rollover(ca.id, {
      keyType: CertificateKeyType.ECDSA,
      keyBits: 384,
    });
    expect(rolled).toMatchObject({ keyType: CertificateKeyType.ECDSA, keyBits: 384 });
    expect(rolled!.publicKey).toMatch(/^ecdsa-sha2-nistp384 /);
    const listed = await sshKeygenList(files, (await userSign(ca.id)).signedCertificate);
    expect(listed.signingCa).toMatch(/^ECDSA /);
    // Same type again keeps the size.
    const { certificateAuthority: again } = await rollover(ca.id);
    expect(again).toMatchObject({ keyType: CertificateKeyType.ECDSA, keyBits: 384 });
    expect((await userSign(ca.id)).caPublicKey.split("\n")).toHaveLength(3);
  });

  it("for X.509: a new CA certificate; old and new leaves verify against the trust bundle", async () => {
    const ca = await createAuthority(
      t,
      ada,
      { type: "ecdsa", curve: "P-256" },
      { authorityType: AuthorityType.X509 },
    );
    const keyPath = `${files.dir}/leaf.key`;
    await run("openssl", ["genpkey", "-algorithm", "ED25519", "-out", keyPath]);
    const csrPath = `${files.dir}/leaf.csr`;
    await run("openssl", [
      "req",
      "-new",
      "-key",
      keyPath,
      "-subj",
      `/CN=${ada.caller.userId}`,
      "-out",
      csrPath,
    ]);
    const csr = readFile(csrPath, "utf8");
    const sign = async () =>
      t.call(ada.caller, CertificateService.method.signX509Certificate, {
        workspaceId: ada.workspaceId,
        caId: ca.id,
        csr: await csr,
      });
    const old = await sign();
    const { certificateAuthority: rolled } = await rollover(ca.id);
    expect(rolled!.certificate).not.toBe(ca.certificate);
    const fresh = await sign();
    expect(fresh.caChain).toBe(rolled!.certificate);

    // The bundle as the anonymous trust endpoint publishes it: what relying parties configure.
    const published = await publishedTrust(t.platform.services, ca.id, "bundle.pem");
    expect(published?.contentType).toBe("application/pem-certificate-chain");
    const bundle = published!.body;
    const stored = (await t.storage.certificateAuthorities.findById(ada.workspaceId, ca.id))!;
    expect(bundle).toBe(
      x509TrustBundle(stored, await retiredKeysOf(t.platform.services, t.storage, stored), t.clock.now()),
    );
    expect(await publishedTrust(t.platform.services, ca.id, "user_ca_keys")).toBeNull();
    const bundleFile = await files.file("bundle.pem", bundle);
    const at = String(Math.floor(t.clock.now().getTime() / 1000));
    for (const leaf of [old.certificate, fresh.certificate]) {
      const leafFile = await files.file("leaf.pem", leaf);
      const { stdout } = await run("openssl", ["verify", "-attime", at, "-CAfile", bundleFile, leafFile]);
      expect(stdout).toContain(": OK");
    }
    // The new chain alone does not vouch for the old leaf.
    const oldLeaf = await files.file("old.pem", old.certificate);
    const newChain = await files.file("new-chain.pem", fresh.caChain);
    await expect(run("openssl", ["verify", "-attime", at, "-CAfile", newChain, oldLeaf])).rejects.toThrow();
  });

  it("codes: not_found for unknown and other workspaces' authorities, permission_denied for viewers, aborted for a lost race", async () => {
    const ca = await createAuthority(t, ada, { type: "ed25519" });
    await expectCode(rollover(crypto.randomUUID()), "not_found");
    const bob = await t.owner();
    await expectCode(
      t.call(bob.caller, CertificateService.method.rolloverCertificateAuthority, {
        workspaceId: bob.workspaceId,
        id: ca.id,
      }),
      "not_found",
    );
    const viewer = await t.signUp();
    await t.storage.members.insert({
      workspaceId: ada.workspaceId,
      userId: viewer.caller.userId,
      role: "viewer",
      createdAt: t.clock.now(),
      updatedAt: t.clock.now(),
    });
    await expectCode(rollover(ca.id, {}, viewer.caller), "permission_denied");

    const outcomes = await Promise.allSettled([rollover(ca.id), rollover(ca.id), rollover(ca.id)]);
    const won = outcomes.filter((o) => o.status === "fulfilled");
    expect(won).toHaveLength(1);
    for (const o of outcomes) {
      if (o.status === "rejected") expect((o.reason as { code: string }).code).toBe("aborted");
    }
    expect((await t.storage.certificateAuthorities.findById(ada.workspaceId, ca.id))?.keyVersion).toBe(2);
    expect(await t.storage.retiredAuthorityKeys.list(ada.workspaceId, ca.id)).toHaveLength(1);
  });
});
