import { X509Certificate } from "node:crypto";
import { AuthorityType, CertificateKeyType, CertificateService, TargetService } from "@wap/api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createTestPlatform, expectCode, type TestPlatform } from "./support.js";

let t: TestPlatform;
let ada: Awaited<ReturnType<TestPlatform["owner"]>>;
beforeEach(async () => {
  t = await createTestPlatform();
  ada = await t.owner();
});
afterEach(() => t.platform.close());

const create = (request: Record<string, unknown>) =>
  t.call(ada.caller, CertificateService.method.createCertificateAuthority, {
    workspaceId: ada.workspaceId,
    name: "ca",
    keyType: CertificateKeyType.ED25519,
    ...request,
  });
const duration = (seconds: number) => ({ seconds: BigInt(seconds), nanos: 0 });

describe("CreateCertificateAuthority", () => {
  it("creates an SSH authority with an OpenSSH public key and sensible defaults", async () => {
    const { certificateAuthority: ca } = await create({ name: "ssh-users" });
    expect(ca).toMatchObject({
      name: "ssh-users",
      authorityType: AuthorityType.SSH,
      keyType: CertificateKeyType.ED25519,
      keyBits: 256,
      isActive: true,
      isDefault: true,
      certificate: "",
    });
    expect(ca!.publicKey).toMatch(/^ssh-ed25519 AAAA[0-9A-Za-z+/]+=*$/);
    expect(Number(ca!.userDefaultTtl!.seconds)).toBeLessThanOrEqual(Number(ca!.userMaxTtl!.seconds));
    expect(ca!.allowedKeyTypes.length).toBe(3);
    expect(Object.keys(ca!.userExtensions)).toContain("permit-pty");
  });

  it("creates an X.509 authority with a CA certificate Node can parse", async () => {
    const { certificateAuthority: ca } = await create({
      name: "mtls",
      keyType: CertificateKeyType.ECDSA,
      keyBits: 384,
      authorityType: AuthorityType.X509,
      lifetime: duration(2_628_000),
    });
    const cert = new X509Certificate(ca!.certificate);
    expect(cert.ca).toBe(true);
    expect(cert.subject).toContain("CN=mtls");
    expect(cert.checkIssued(cert)).toBe(true);
    expect(ca!.keyBits).toBe(384);
    expect(ca!.serialNumber).toMatch(/^[0-9a-f]+$/);
    expect(new Date(cert.validTo).getTime() - new Date(cert.validFrom).getTime()).toBe(2_628_000_000);
  });

  it("keeps exactly one default per workspace and kind", async () => {
    const first = (await create({ name: "one" })).certificateAuthority!;
    const second = (await create({ name: "two", isDefault: true })).certificateAuthority!;
    const x509 = (await create({ name: "x", authorityType: AuthorityType.X509 })).certificateAuthority!;
    expect(x509.isDefault).toBe(true);
    const { certificateAuthorities } = await t.call(
      ada.caller,
      CertificateService.method.listCertificateAuthorities,
      {
        workspaceId: ada.workspaceId,
      },
    );
    const defaults = certificateAuthorities.filter((ca) => ca.isDefault).map((ca) => ca.name);
    expect(defaults.sort()).toEqual(["two", "x"]);
    await t.call(ada.caller, CertificateService.method.updateCertificateAuthority, {
      workspaceId: ada.workspaceId,
      id: first.id,
      isDefault: true,
    });
    const after = await t.storage.certificateAuthorities.list(ada.workspaceId);
    expect(
      after
        .filter((ca) => ca.isDefault)
        .map((ca) => ca.name)
        .sort(),
    ).toEqual(["one", "x"]);
    expect(second.id).not.toBe(first.id);
  });

  it("makes the first authority of each kind the default even when asked not to, and a later one only when asked", async () => {
    const first = (await create({ name: "first", isDefault: false })).certificateAuthority!;
    const later = (await create({ name: "later", isDefault: false })).certificateAuthority!;
    const x509 = (await create({ name: "tls", authorityType: AuthorityType.X509, isDefault: false }))
      .certificateAuthority!;
    expect([first.isDefault, later.isDefault, x509.isDefault]).toEqual([true, false, true]);
  });

  it("says, when no authority of a kind is the default, whether there is none or which to make the default", async () => {
    const target = () =>
      t.call(ada.caller, TargetService.method.createTarget, { workspaceId: ada.workspaceId, name: "web" });
    const none = await expectCode(target(), "failed_precondition");
    expect(none.reason).toBe("NO_DEFAULT_SSH_CA");
    expect(none.message).toBe(
      "the workspace has no SSH certificate authority: create one (console: Certificates, or CreateCertificateAuthority); the first SSH authority becomes the default",
    );
    const first = (await create({ name: "first" })).certificateAuthority!;
    await create({ name: "second" });
    await t.call(ada.caller, CertificateService.method.deleteCertificateAuthority, {
      workspaceId: ada.workspaceId,
      id: first.id,
    });
    const noDefault = await expectCode(target(), "failed_precondition");
    expect(noDefault.message).toBe(
      "none of the workspace's SSH certificate authorities ('second') is the default: make one the default (console: Certificates, or UpdateCertificateAuthority with isDefault), or name one (caId)",
    );
  });

  it("refuses bad key sizes, unspecified key types, out-of-bound durations and unknown critical options", async () => {
    await expectCode(create({ keyType: CertificateKeyType.RSA, keyBits: 1024 }), "invalid_argument");
    await expectCode(create({ keyType: CertificateKeyType.UNSPECIFIED }), "invalid_argument");
    await expectCode(create({ keyType: 7 }), "invalid_argument");
    await expectCode(create({ lifetime: duration(2_627_999) }), "invalid_argument");
    await expectCode(create({ userMaxTtl: duration(59) }), "invalid_argument");
    await expectCode(
      create({ userDefaultTtl: duration(7200), userMaxTtl: duration(3600) }),
      "invalid_argument",
    );
    await expectCode(create({ userCriticalOptions: { "no-such-option": "x" } }), "invalid_argument");
    await expectCode(create({ name: "" }), "invalid_argument");
    expect(await t.storage.certificateAuthorities.list(ada.workspaceId)).toEqual([]);
  });

  it("refuses a duplicate name with already_exists", async () => {
    await create({ name: "dup" });
    await expectCode(create({ name: "dup" }), "already_exists");
  });

  it("never stores the private key in plaintext", async () => {
    const { certificateAuthority: ca } = await create({ keyType: CertificateKeyType.RSA, keyBits: 2048 });
    const stored = await t.storage.certificateAuthorities.findById(ada.workspaceId, ca!.id);
    const sealed = Buffer.from(stored!.sealedPrivateKey);
    // A PKCS#8 RSA key starts with SEQUENCE, INTEGER 0, and the rsaEncryption OID.
    expect(sealed.includes(Buffer.from("2a864886f70d010101", "hex"))).toBe(false);
    expect(sealed.toString("latin1")).not.toContain("PRIVATE KEY");
  });
});

describe("Update, Get and Delete", () => {
  it("changes only the fields sent and checks the result as a whole", async () => {
    const { certificateAuthority: ca } = await create({
      name: "a",
      userMaxTtl: duration(7200),
      userDefaultTtl: duration(3600),
    });
    const { certificateAuthority: updated } = await t.call(
      ada.caller,
      CertificateService.method.updateCertificateAuthority,
      {
        workspaceId: ada.workspaceId,
        id: ca!.id,
        isActive: false,
      },
    );
    expect(updated).toMatchObject({ name: "a", isActive: false, userMaxTtl: duration(7200) });
    await expectCode(
      t.call(ada.caller, CertificateService.method.updateCertificateAuthority, {
        workspaceId: ada.workspaceId,
        id: ca!.id,
        userDefaultTtl: duration(10_000),
      }),
      "invalid_argument",
    );
  });

  it("does not reach authorities of another workspace", async () => {
    const { certificateAuthority: ca } = await create({ name: "mine" });
    const bob = await t.owner();
    const methods = [
      CertificateService.method.getCertificateAuthority,
      CertificateService.method.deleteCertificateAuthority,
    ];
    for (const method of methods as Array<typeof CertificateService.method.getCertificateAuthority>) {
      await expectCode(t.call(bob.caller, method, { workspaceId: bob.workspaceId, id: ca!.id }), "not_found");
      await expectCode(t.call(bob.caller, method, { workspaceId: ada.workspaceId, id: ca!.id }), "not_found");
    }
    await expectCode(
      t.call(bob.caller, CertificateService.method.updateCertificateAuthority, {
        workspaceId: bob.workspaceId,
        id: ca!.id,
        name: "stolen",
      }),
      "not_found",
    );
    expect((await t.storage.certificateAuthorities.findById(ada.workspaceId, ca!.id))?.name).toBe("mine");
  });

  it("deletes", async () => {
    const { certificateAuthority: ca } = await create({});
    await t.call(ada.caller, CertificateService.method.deleteCertificateAuthority, {
      workspaceId: ada.workspaceId,
      id: ca!.id,
    });
    await expectCode(
      t.call(ada.caller, CertificateService.method.getCertificateAuthority, {
        workspaceId: ada.workspaceId,
        id: ca!.id,
      }),
      "not_found",
    );
  });
});
