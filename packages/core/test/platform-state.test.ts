/**
 * What a platform keeps between calls (signers, retired keys, rate-limit windows...) belongs to
 * that platform: two platforms in one process share none of it.
 */
import { createHash } from "node:crypto";
import { CertificateService, SignSSHCertificateRequest_CertificateType as CertType } from "@wap/api";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createMasterKeyStore, generateMasterKey } from "../src/crypto/key-store.js";
import { systemRandom } from "../src/runtime.js";
import { createAuthority, type Owner, scratch, sshKeygenList, subjectKey } from "./support/certificates.js";
import { createTestPlatform, type TestPlatform } from "./support.js";

let files: Awaited<ReturnType<typeof scratch>>;
beforeAll(async () => {
  files = await scratch();
});
afterAll(() => files.remove());

/** Ids drawn in the same order on two platforms are the same: their authorities share ids. */
function countingRandom() {
  let n = 0;
  return {
    bytes: systemRandom.bytes,
    uuid: () => `00000000-0000-7000-8000-${(++n).toString(16).padStart(12, "0")}`,
  };
}

/** `SHA256:...` of an authorized_keys line, as ssh-keygen names a signing CA. */
function fingerprint(line: string): string {
  const blob = Buffer.from(line.split(" ")[1] ?? "", "base64");
  return `SHA256:${createHash("sha256").update(blob).digest("base64").replace(/=+$/, "")}`;
}

let platforms: TestPlatform[];
beforeEach(async () => {
  platforms = [
    await createTestPlatform({ random: countingRandom() }),
    await createTestPlatform({ random: countingRandom() }),
  ];
});
afterEach(async () => {
  for (const t of platforms) await t.platform.close();
});

const sign = async (t: TestPlatform, owner: Owner, caId: string) =>
  t.call(owner.caller, CertificateService.method.signSSHCertificate, {
    workspaceId: owner.workspaceId,
    caId,
    type: CertType.USER,
    publicKey: (await subjectKey({ type: "ed25519" })).line,
  });

describe("one platform", () => {
  it("opens an authority's sealed key once, however many certificates it signs", async () => {
    const keyStore = createMasterKeyStore({ masterKey: generateMasterKey() });
    const opened: string[] = [];
    const counting = {
      ...keyStore,
      open: (sealed: Uint8Array, context: string) => {
        opened.push(context);
        return keyStore.open(sealed, context);
      },
    };
    const t = await createTestPlatform({ keyStore: counting });
    try {
      const owner = await t.owner();
      const ca = await createAuthority(t, owner, { type: "ed25519" });
      const before = opened.filter((c) => c.includes(ca.id)).length;
      for (let i = 0; i < 5; i++) await sign(t, owner, ca.id);
      // Every call gets its own copy of the services: the signer must outlive them.
      expect(opened.filter((c) => c.includes(ca.id)).length - before).toBe(1);
    } finally {
      await t.platform.close();
    }
  });
});

describe("two platforms in one process", () => {
  it("each signs with its own authority's key, even where ids and key versions coincide", async () => {
    const [a, b] = platforms as [TestPlatform, TestPlatform];
    const adaOfA = await a.owner();
    const adaOfB = await b.owner();
    const caOfA = await createAuthority(a, adaOfA, { type: "ed25519" });
    const caOfB = await createAuthority(b, adaOfB, { type: "ed25519" });
    expect(caOfB.id).toBe(caOfA.id);
    expect(caOfB.publicKey).not.toBe(caOfA.publicKey);

    // A signs first (its signer is now ready), then B: B must not be served A's signer.
    const byA = await sign(a, adaOfA, caOfA.id);
    const byB = await sign(b, adaOfB, caOfB.id);
    expect((await sshKeygenList(files, byA.signedCertificate)).signingCa).toContain(
      fingerprint(caOfA.publicKey),
    );
    expect((await sshKeygenList(files, byB.signedCertificate)).signingCa).toContain(
      fingerprint(caOfB.publicKey),
    );
  });

  it("a rollover on one changes nothing the other trusts or signs with", async () => {
    const [a, b] = platforms as [TestPlatform, TestPlatform];
    const adaOfA = await a.owner();
    const adaOfB = await b.owner();
    const caOfA = await createAuthority(a, adaOfA, { type: "ed25519" });
    const caOfB = await createAuthority(b, adaOfB, { type: "ed25519" });
    await sign(a, adaOfA, caOfA.id);
    await sign(b, adaOfB, caOfB.id);

    const { certificateAuthority: rolled } = await a.call(
      adaOfA.caller,
      CertificateService.method.rolloverCertificateAuthority,
      { workspaceId: adaOfA.workspaceId, id: caOfA.id },
    );
    const afterA = await sign(a, adaOfA, caOfA.id);
    expect(afterA.caPublicKey.split("\n")).toEqual([rolled!.publicKey, caOfA.publicKey]);
    expect((await sshKeygenList(files, afterA.signedCertificate)).signingCa).toContain(
      fingerprint(rolled!.publicKey),
    );

    const afterB = await sign(b, adaOfB, caOfB.id);
    expect(afterB.caPublicKey).toBe(caOfB.publicKey);
    expect((await sshKeygenList(files, afterB.signedCertificate)).signingCa).toContain(
      fingerprint(caOfB.publicKey),
    );
  });
});
