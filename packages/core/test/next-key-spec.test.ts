/** The next key of an authority (rollover and rotation share the rule). */
import { CertificateKeyType } from "@wap/api";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { nextKeySpec } from "../src/certificates/authority-keys.js";

describe("nextKeySpec", () => {
  const rsa = { keyType: "rsa", keyBits: 3072 } as const;

  it("keeps the current type and size when neither is given (0 or absent)", () => {
    expect(nextKeySpec(rsa, {})).toEqual({ algorithm: "rsa", keyBits: 3072 });
    expect(nextKeySpec(rsa, { keyType: 0, keyBits: 0 })).toEqual({ algorithm: "rsa", keyBits: 3072 });
  });

  it("takes a new type with its default size, and a size given with it", () => {
    expect(nextKeySpec(rsa, { keyType: CertificateKeyType.ED25519 })).toEqual({
      algorithm: "ed25519",
      keyBits: undefined,
    });
    expect(nextKeySpec(rsa, { keyType: CertificateKeyType.ECDSA, keyBits: 384 })).toEqual({
      algorithm: "ecdsa",
      keyBits: 384,
    });
  });

  it("refuses any size an ECDSA key cannot have, naming keyBits", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 100_000 }).filter((bits) => ![256, 384, 521].includes(bits)),
        (bits) => {
          expect(() => nextKeySpec(rsa, { keyType: CertificateKeyType.ECDSA, keyBits: bits })).toThrow(
            /keyBits/,
          );
        },
      ),
    );
  });
});
