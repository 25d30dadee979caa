/**
 * Authorities whose keys live in a PKCS#11 token, on a real SoftHSM2 token: created with
 * keyStorage PKCS11, they issue SSH certificates `ssh-keygen -L` verifies, X.509 leaves and CRLs
 * `openssl verify` accepts; the row stores only the key object's URI, the object is sensitive and
 * not extractable; rollover and rotation generate the next key in the token; a server without a
 * token, or with a token that lacks the key, says so.
 */
import { createHash } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { userInfo } from "node:os";
import { join } from "node:path";
import {
  AuthorityType,
  CertificateService,
  SignSSHCertificateRequest_CertificateType as CertType,
  KeyStorage,
  RotationPhase,
  SignX509CertificateRequest_X509Usage as Usage,
} from "@wap/api";
import { createSoftHsmToken, type SoftHsmToken } from "@wap/test-kit/softhsm";
import { startSshd } from "@wap/test-kit/sshd";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CaKeySpec, describeKeySpec } from "../src/crypto/key-types.js";
import { openPkcs11Token, type Pkcs11Token } from "../src/crypto/pkcs11/token.js";
import {
  createAuthority,
  identityFileText,
  type Owner,
  run,
  scratch,
  sshKeygenList,
  subjectKey,
} from "./support/certificates.js";
import { createTestPlatform, expectCode, type TestPlatform } from "./support.js";

const specs: CaKeySpec[] = [
  { type: "ed25519" },
  { type: "ecdsa", curve: "P-256" },
  { type: "rsa", bits: 2048 },
];

let hsm: SoftHsmToken;
let token: Pkcs11Token;
let t: TestPlatform;
let ada: Owner;
let files: Awaited<ReturnType<typeof scratch>>;

beforeAll(async () => {
  hsm = await createSoftHsmToken("wap-ca");
  // A second token, made before the library loads (SoftHSM lists its tokens once).
  await hsm.addToken("wap-other");
  token = openPkcs11Token({ module: hsm.module, tokenLabel: hsm.tokenLabel, pin: hsm.pin });
  t = await createTestPlatform({ pkcs11Token: token });
  ada = await t.owner();
  files = await scratch();
});

afterAll(async () => {
  await t?.platform.close();
  token?.close();
  await hsm?.remove();
  await files?.remove();
});

const stored = async (caId: string) => {
  const record = await t.storage.certificateAuthorities.findById(ada.workspaceId, caId);
  return record!;
};
const uriOf = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

/** The SHA256 fingerprint ssh-keygen prints for an authorized_keys line. */
function fingerprintOf(line: string): string {
  const blob = Buffer.from(line.split(" ")[1]!, "base64");
  return `SHA256:${createHash("sha256").update(blob).digest("base64").replace(/=+$/, "")}`;
}

async function signUserCertificate(caId: string) {
  const key = await subjectKey({ type: "ed25519" });
  return t.call(ada.caller, CertificateService.method.signSSHCertificate, {
    workspaceId: ada.workspaceId,
    caId,
    type: CertType.USER,
    publicKey: key.line,
  });
}

let csrCount = 0;
async function leafFor(caId: string) {
  const keyFile = join(files.dir, `leaf-${++csrCount}.key`);
  const csrFile = join(files.dir, `leaf-${csrCount}.csr`);
  await run("openssl", [
    "genpkey",
    "-algorithm",
    "EC",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-out",
    keyFile,
  ]);
  await run("openssl", [
    "req",
    "-new",
    "-key",
    keyFile,
    "-subj",
    `/CN=${ada.caller.userId}`,
    "-out",
    csrFile,
  ]);
  return t.call(ada.caller, CertificateService.method.signX509Certificate, {
    workspaceId: ada.workspaceId,
    caId,
    csr: await readFile(csrFile, "utf8"),
    usage: Usage.CLIENT_AUTH,
  });
}

async function opensslVerify(caChain: string, certificate: string, extra: string[] = []) {
  const ca = await files.file("ca.pem", caChain);
  const leaf = await files.file("leaf.pem", certificate);
  const at = String(Math.floor(t.clock.now().getTime() / 1000));
  const { stdout } = await run("openssl", ["verify", "-attime", at, ...extra, "-CAfile", ca, leaf]);
  return stdout;
}

describe("SSH authorities with their key in the token", () => {
  it.each(specs.map((spec) => [describeKeySpec(spec), spec] as const))(
    "a %s authority issues user certificates ssh-keygen verifies against its public key",
    async (_name, spec) => {
      const ca = await createAuthority(t, ada, spec, { keyStorage: KeyStorage.PKCS11 });
      expect(ca.keyStorage).toBe(KeyStorage.PKCS11);
      const res = await signUserCertificate(ca.id);
      // ssh-keygen -L checks the CA signature while it parses the certificate.
      const listed = await sshKeygenList(files, res.signedCertificate);
      expect(listed.type).toContain("user certificate");
      expect(listed.signingCa).toContain(fingerprintOf(ca.publicKey));
      expect(res.caPublicKey.split("\n")[0]).toBe(ca.publicKey);

      // What the row holds is the key object's URI, and the object is sensitive, not extractable.
      const record = await stored(ca.id);
      expect(record.keyStorage).toBe("pkcs11");
      expect(uriOf(record.sealedPrivateKey)).toMatch(
        new RegExp(`^pkcs11:object=wap-ca-${ca.id}-v1;id=(%[0-9a-f]{2}){16};type=private$`),
      );
      expect(token.keyAttributes(record.sealedPrivateKey)).toEqual({
        extractable: false,
        sensitive: true,
        private: true,
      });
    },
  );

  it("rollover generates the next key in the token, signs with it and destroys the old one", async () => {
    const ca = await createAuthority(t, ada, { type: "ed25519" }, { keyStorage: KeyStorage.PKCS11 });
    const before = await stored(ca.id);
    const { certificateAuthority: rolled } = await t.call(
      ada.caller,
      CertificateService.method.rolloverCertificateAuthority,
      { workspaceId: ada.workspaceId, id: ca.id },
    );
    expect(rolled!.keyStorage).toBe(KeyStorage.PKCS11);
    const after = await stored(ca.id);
    expect(uriOf(after.sealedPrivateKey)).toContain(`object=wap-ca-${ca.id}-v2;`);
    expect(token.keyAttributes(after.sealedPrivateKey).extractable).toBe(false);
    expect(() => token.keyAttributes(before.sealedPrivateKey)).toThrow(/has no private key/);
    const listed = await sshKeygenList(files, (await signUserCertificate(ca.id)).signedCertificate);
    expect(listed.signingCa).toContain(fingerprintOf(rolled!.publicKey));
  });

  it("a staged rotation's next key is generated in the token, and discarded from it when rolled back", async () => {
    const ca = await createAuthority(
      t,
      ada,
      { type: "ecdsa", curve: "P-256" },
      { keyStorage: KeyStorage.PKCS11 },
    );
    const rotate = (phase: RotationPhase) =>
      t.call(ada.caller, CertificateService.method.rotateCertificateAuthority, {
        workspaceId: ada.workspaceId,
        id: ca.id,
        phase,
      });
    await rotate(RotationPhase.PUBLISHED);
    const next = (await stored(ca.id)).nextKey!;
    expect(uriOf(next.sealedPrivateKey)).toContain(`object=wap-ca-${ca.id}-v2;`);
    expect(token.keyAttributes(next.sealedPrivateKey).sensitive).toBe(true);
    await rotate(RotationPhase.UNSPECIFIED);
    expect(() => token.keyAttributes(next.sealedPrivateKey)).toThrow(/has no private key/);
  });
});

describe("logging in to a real sshd", () => {
  it("a certificate from an authority whose key is in the token logs in to sshd trusting its public key", async () => {
    // sshd checks validity against the real clock.
    t.clock.set(new Date());
    const ca = await createAuthority(
      t,
      ada,
      { type: "ecdsa", curve: "P-256" },
      { keyStorage: KeyStorage.PKCS11 },
    );
    const key = await subjectKey({ type: "ed25519" });
    const res = await signUserCertificate(ca.id);
    const sshd = await startSshd({
      trustedUserCaKeys: [ca.publicKey],
      principalsForUser: { [userInfo().username]: [ada.caller.userId] },
    });
    try {
      const result = await sshd.ssh({
        identityFile: await files.file("id_ed25519", identityFileText(key), 0o600),
        certificateFile: await files.file("id_ed25519-cert.pub", `${res.signedCertificate}\n`),
        command: "echo ok",
      });
      expect(result, sshd.logs()).toMatchObject({ code: 0, stdout: "ok\n" });
    } finally {
      await sshd.stop();
    }
  }, 60_000);
});

describe("X.509 authorities with their key in the token", () => {
  it.each(specs.map((spec) => [describeKeySpec(spec), spec] as const))(
    "a %s authority's CA certificate, leaves and CRL verify with openssl",
    async (_name, spec) => {
      const ca = await createAuthority(t, ada, spec, {
        keyStorage: KeyStorage.PKCS11,
        authorityType: AuthorityType.X509,
      });
      // Self-signed in the token: openssl checks the signature of a trust anchor with -check_ss_sig.
      expect(await opensslVerify(ca.certificate, ca.certificate, ["-check_ss_sig"])).toContain(": OK");
      const leaf = await leafFor(ca.id);
      expect(
        await opensslVerify(leaf.caChain, leaf.certificate, ["-x509_strict", "-purpose", "sslclient"]),
      ).toContain(": OK");

      const list = await t.call(ada.caller, CertificateService.method.getRevocationList, {
        workspaceId: ada.workspaceId,
        caId: ca.id,
      });
      const crlDer = join(files.dir, `crl-${describeKeySpec(spec)}.der`);
      await writeFile(crlDer, list.revocationList);
      const caFile = await files.file("ca.pem", ca.certificate);
      const { stderr } = await run("openssl", [
        "crl",
        "-inform",
        "DER",
        "-in",
        crlDer,
        "-CAfile",
        caFile,
        "-noout",
      ]);
      expect(stderr).toMatch(/verify OK/);
    },
  );
});

describe("refusals", () => {
  it("refuses keyStorage PKCS11 with failed_precondition naming the settings on a server without a token", async () => {
    const plain = await createTestPlatform();
    try {
      const owner = await plain.owner();
      const error = await expectCode(
        createAuthority(plain, owner, { type: "ed25519" }, { keyStorage: KeyStorage.PKCS11 }),
        "failed_precondition",
      );
      expect(error.message).toContain("WAP_PKCS11_MODULE");
      expect(await plain.storage.certificateAuthorities.list(owner.workspaceId)).toEqual([]);
    } finally {
      await plain.platform.close();
    }
  });

  it("answers failed_precondition, not internal, when the configured token lacks the authority's key", async () => {
    const ca = await createAuthority(t, ada, { type: "ed25519" }, { keyStorage: KeyStorage.PKCS11 });
    const other = openPkcs11Token({ module: hsm.module, tokenLabel: "wap-other", pin: hsm.pin });
    const elsewhere = await createTestPlatform({
      storage: t.storage,
      keyStore: t.platform.services.keyStore,
      pkcs11Token: other,
    });
    try {
      const error = await expectCode(
        elsewhere.call(ada.caller, CertificateService.method.signSSHCertificate, {
          workspaceId: ada.workspaceId,
          caId: ca.id,
          type: CertType.USER,
          publicKey: (await subjectKey({ type: "ed25519" })).line,
        }),
        "failed_precondition",
      );
      expect(error.message).toContain(`wap-ca-${ca.id}-v1`);
      expect(error.message).toContain('token "wap-other" has no such key');
    } finally {
      other.close();
    }
  });
});
