import { createPublicKey, verify } from "node:crypto";
import { createSoftHsmToken, type SoftHsmToken } from "@wap/test-kit/softhsm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CaKeySpec, describeKeySpec } from "../key-types.js";
import { parseKeyReference } from "./key-reference.js";
import { openPkcs11Token, Pkcs11KeyMissingError, type Pkcs11Token, Pkcs11TokenError } from "./token.js";

let hsm: SoftHsmToken;
let token: Pkcs11Token;

beforeAll(async () => {
  hsm = await createSoftHsmToken();
  token = openPkcs11Token({ module: hsm.module, tokenLabel: hsm.tokenLabel, pin: hsm.pin });
});

afterAll(async () => {
  token?.close();
  await hsm?.remove();
});

const specs: CaKeySpec[] = [
  { type: "ed25519" },
  { type: "ecdsa", curve: "P-256" },
  { type: "rsa", bits: 2048 },
];

describe("keys in a PKCS#11 token (SoftHSM2)", () => {
  it.each(specs.map((spec) => [describeKeySpec(spec), spec] as const))(
    "generates a %s key in the token that signs what its public key verifies",
    (_name, spec) => {
      const { reference, key } = token.generateKey(spec, `test-${describeKeySpec(spec)}`);
      const data = Buffer.from("to be signed");
      const signature = key.sign(data, "sha256");
      const publicKey = createPublicKey({
        key: Buffer.from(key.publicKeySpkiDer),
        format: "der",
        type: "spki",
      });
      const hash = spec.type === "ed25519" ? null : "sha256";
      const options =
        spec.type === "ecdsa" ? { key: publicKey, dsaEncoding: "ieee-p1363" as const } : publicKey;
      expect(verify(hash, data, options, signature)).toBe(true);
      // Found again by its reference, as a server restart would.
      const again = token.signingKey(reference, spec, key.publicKeySpkiDer);
      expect(verify(hash, data, options, again.sign(data, "sha256"))).toBe(true);
      expect(token.keyAttributes(reference)).toEqual({ extractable: false, sensitive: true, private: true });
    },
  );

  it("stores a PKCS#11 URI naming the object's label and id, nothing of the key", () => {
    const { reference } = token.generateKey({ type: "ed25519" }, "wap-ca-x-v1");
    const text = new TextDecoder().decode(reference);
    expect(text).toMatch(/^pkcs11:object=wap-ca-x-v1;id=(%[0-9a-f]{2}){16};type=private$/);
    expect(parseKeyReference(reference).label).toBe("wap-ca-x-v1");
  });

  it("answers Pkcs11KeyMissingError for a key the token does not have, and after destroyKey", () => {
    const { reference, key } = token.generateKey({ type: "ecdsa", curve: "P-256" }, "doomed");
    token.destroyKey(reference);
    expect(() => token.signingKey(reference, key.spec, key.publicKeySpkiDer)).toThrow(Pkcs11KeyMissingError);
  });

  it("refuses an unknown token label and a wrong PIN with a message naming what is wrong", () => {
    expect(() => openPkcs11Token({ module: hsm.module, tokenLabel: "nope", pin: hsm.pin })).toThrow(
      /no PKCS#11 token labelled "nope"/,
    );
    expect(() => openPkcs11Token({ module: "/nonexistent/lib.so", tokenLabel: "x", pin: "1" })).toThrow(
      Pkcs11TokenError,
    );
  });
});
