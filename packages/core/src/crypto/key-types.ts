/**
 * Which key a certificate authority holds, and how the API's `keyType`/`keyBits` pick one.
 *
 * @module
 */

/** Key algorithms as the API names them (`CERTIFICATE_KEY_TYPE_*` without the prefix). */
export const caKeyTypes = ["RSA", "ECDSA", "ED25519"] as const;
export type CaKeyType = (typeof caKeyTypes)[number];

export const ecdsaCurves = ["P-256", "P-384", "P-521"] as const;
export type EcdsaCurve = (typeof ecdsaCurves)[number];

export const rsaKeySizes = [2048, 3072, 4096] as const;
export type RsaKeySize = (typeof rsaKeySizes)[number];

/** A fully resolved key algorithm and size. */
export type CaKeySpec =
  | { readonly type: "ed25519" }
  | { readonly type: "ecdsa"; readonly curve: EcdsaCurve }
  | { readonly type: "rsa"; readonly bits: RsaKeySize };

/** Every spec we can generate, for tests and documentation. */
export const allCaKeySpecs: readonly CaKeySpec[] = [
  { type: "ed25519" },
  { type: "ecdsa", curve: "P-256" },
  { type: "ecdsa", curve: "P-384" },
  { type: "ecdsa", curve: "P-521" },
  { type: "rsa", bits: 2048 },
  { type: "rsa", bits: 3072 },
  { type: "rsa", bits: 4096 },
];

/** 3072 rather than 4096: RSA-4096 generation takes seconds and signs ~15x slower than 2048. */
export const DEFAULT_RSA_BITS: RsaKeySize = 3072;
export const DEFAULT_ECDSA_BITS = 256;

const curveByBits: Readonly<Record<number, EcdsaCurve>> = { 256: "P-256", 384: "P-384", 521: "P-521" };
const bitsByCurve: Readonly<Record<EcdsaCurve, number>> = { "P-256": 256, "P-384": 384, "P-521": 521 };

/**
 * A `keyType`/`keyBits` combination the platform does not support. `reason` names the allowed
 * values; callers turn it into `invalid_argument`.
 */
export class KeySpecError extends Error {
  readonly reason: string;

  constructor(reason: string) {
    super(reason);
    this.name = new.target.name;
    this.reason = reason;
  }
}

/**
 * Resolves the API's key type and bit size to a key spec.
 *
 * `keyBits` 0 counts as unset: the field is a plain proto3 int32, so an omitted value arrives as 0.
 * Defaults: RSA 3072, ECDSA 256. Ed25519 has one size and accepts only unset or 256.
 *
 * @example
 * resolveKeySpec("ECDSA", 384); // { type: "ecdsa", curve: "P-384" }
 * resolveKeySpec("RSA", undefined); // { type: "rsa", bits: 3072 }
 */
export function resolveKeySpec(keyType: CaKeyType, keyBits: number | undefined): CaKeySpec {
  const bits = keyBits === undefined || keyBits === 0 ? undefined : keyBits;
  switch (keyType) {
    case "ED25519":
      if (bits !== undefined && bits !== 256) {
        throw new KeySpecError(`keyBits must be 0 or 256 for ED25519 keys (got ${bits})`);
      }
      return { type: "ed25519" };
    case "ECDSA": {
      const curve = curveByBits[bits ?? DEFAULT_ECDSA_BITS];
      if (curve === undefined) {
        throw new KeySpecError(`keyBits must be 256, 384 or 521 for ECDSA keys (got ${bits})`);
      }
      return { type: "ecdsa", curve };
    }
    case "RSA": {
      const size = bits ?? DEFAULT_RSA_BITS;
      if (!(rsaKeySizes as readonly number[]).includes(size)) {
        throw new KeySpecError(`keyBits must be 2048, 3072 or 4096 for RSA keys (got ${bits})`);
      }
      return { type: "rsa", bits: size as RsaKeySize };
    }
    default:
      throw new KeySpecError(`keyType must be one of ${caKeyTypes.join(", ")} (got ${String(keyType)})`);
  }
}

/** The key size in bits as the API reports it (`keyBits`); Ed25519 is 256. */
export function keyBitsOf(spec: CaKeySpec): number {
  switch (spec.type) {
    case "ed25519":
      return 256;
    case "ecdsa":
      return bitsByCurve[spec.curve];
    case "rsa":
      return spec.bits;
  }
}

/** The API's key type name for a spec. */
export function keyTypeOf(spec: CaKeySpec): CaKeyType {
  switch (spec.type) {
    case "ed25519":
      return "ED25519";
    case "ecdsa":
      return "ECDSA";
    case "rsa":
      return "RSA";
  }
}

/** A short label for logs and test names, e.g. `ecdsa-P-384`. */
export function describeKeySpec(spec: CaKeySpec): string {
  switch (spec.type) {
    case "ed25519":
      return "ed25519";
    case "ecdsa":
      return `ecdsa-${spec.curve}`;
    case "rsa":
      return `rsa-${spec.bits}`;
  }
}
