import { readSshCertificate, sshPublicKeyLine } from "@wap/ssh-wire";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { generateKeyPair } from "../generate-key.js";
import { createSshCertificateSigner } from "./certificate.js";
import { parseSshPublicKey } from "./parse-public-key.js";

describe("readSshCertificate", () => {
  it("reads back what the encoder wrote, for every subject key type", async () => {
    const ca = await generateKeyPair({ type: "ed25519" });
    const signer = createSshCertificateSigner(ca.privateKeyPkcs8Der, ca.spec);
    const subjects = await Promise.all([
      generateKeyPair({ type: "ed25519" }),
      generateKeyPair({ type: "ecdsa", curve: "P-384" }),
      generateKeyPair({ type: "rsa", bits: 2048 }),
    ]);
    const principalName = fc.stringMatching(/^[a-z0-9-]{1,20}$/);
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...subjects),
        fc.array(principalName, { minLength: 1, maxLength: 5 }),
        fc.integer({ min: 0, max: 2 ** 32 }),
        fc.integer({ min: 1, max: 10 ** 7 }),
        fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
        fc.constantFrom("user" as const, "host" as const),
        async (subject, principals, after, span, serial, type) => {
          const line = signer.sign({
            publicKey: parseSshPublicKey(sshPublicKeyLine(subject.publicKeySpkiDer)),
            type,
            serial,
            keyId: "ada@example",
            principals,
            validAfter: new Date(after * 1000),
            validBefore: new Date((after + span) * 1000),
            criticalOptions: {},
            extensions: type === "user" ? { "permit-pty": "" } : {},
          });
          const info = readSshCertificate(line);
          expect(info).toMatchObject({ type, serial, keyId: "ada@example", principals });
          expect(info.validAfter.getTime()).toBe(after * 1000);
          expect(info.validBefore.getTime()).toBe((after + span) * 1000);
          expect(info.caPublicKey).toBe(signer.publicKeyLine);
        },
      ),
      { numRuns: 30 },
    );
  });

  it("refuses what is not a certificate, with a RangeError", async () => {
    const key = await generateKeyPair({ type: "ed25519" });
    expect(() => readSshCertificate(sshPublicKeyLine(key.publicKeySpkiDer))).toThrow(RangeError);
    expect(() => readSshCertificate("ssh-ed25519-cert-v01@openssh.com AAAA")).toThrow(RangeError);
    expect(() => readSshCertificate("")).toThrow(RangeError);
  });
});
