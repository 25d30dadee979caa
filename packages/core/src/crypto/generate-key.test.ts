import { createPrivateKey, createPublicKey, sign, verify } from "node:crypto";
import { describe, expect, it } from "vitest";
import { generateKeyPair } from "./generate-key.js";
import { allCaKeySpecs, describeKeySpec } from "./key-types.js";

const nodeKeyType = { ed25519: "ed25519", ecdsa: "ec", rsa: "rsa" } as const;

describe.each(allCaKeySpecs.map((spec) => [describeKeySpec(spec), spec] as const))("%s", (_name, spec) => {
  it("generates a matching PKCS#8/SPKI pair of the requested size", async () => {
    const key = await generateKeyPair(spec);
    expect(key.spec).toBe(spec);
    // Plain Uint8Arrays, not Buffers that alias node's pool.
    expect(Object.getPrototypeOf(key.privateKeyPkcs8Der)).toBe(Uint8Array.prototype);
    expect(Object.getPrototypeOf(key.publicKeySpkiDer)).toBe(Uint8Array.prototype);

    const privateKey = createPrivateKey({
      key: Buffer.from(key.privateKeyPkcs8Der),
      format: "der",
      type: "pkcs8",
    });
    const publicKey = createPublicKey({
      key: Buffer.from(key.publicKeySpkiDer),
      format: "der",
      type: "spki",
    });
    expect(privateKey.asymmetricKeyType).toBe(nodeKeyType[spec.type]);
    expect(createPublicKey(privateKey).equals(publicKey)).toBe(true);
    // asymmetricKeyDetails names curves the OpenSSL way (prime256v1, secp384r1); JWK uses P-256.
    if (spec.type === "ecdsa") expect(publicKey.export({ format: "jwk" }).crv).toBe(spec.curve);
    if (spec.type === "rsa") {
      expect(publicKey.asymmetricKeyDetails?.modulusLength).toBe(spec.bits);
      expect(publicKey.asymmetricKeyDetails?.publicExponent).toBe(65537n);
    }

    const message = new TextEncoder().encode("hello");
    const hash = spec.type === "ed25519" ? null : "sha256";
    expect(verify(hash, message, publicKey, sign(hash, message, privateKey))).toBe(true);
  });
});

describe("generateKeyPair", () => {
  it("does not block the event loop while generating RSA keys", async () => {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    try {
      await Promise.all([
        generateKeyPair({ type: "rsa", bits: 3072 }),
        generateKeyPair({ type: "rsa", bits: 3072 }),
      ]);
    } finally {
      clearInterval(timer);
    }
    // Sync generation would leave the interval no chance to fire at all.
    expect(ticks).toBeGreaterThan(0);
  });

  it("makes a different key every time", async () => {
    const [a, b] = await Promise.all([
      generateKeyPair({ type: "ed25519" }),
      generateKeyPair({ type: "ed25519" }),
    ]);
    expect(a.privateKeyPkcs8Der).not.toEqual(b.privateKeyPkcs8Der);
  });
});
