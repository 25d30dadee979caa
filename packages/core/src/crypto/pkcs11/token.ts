/**
 * CA keys inside a PKCS#11 token (an HSM, SoftHSM, or a cloud KMS's PKCS#11 library), through
 * binding(). Keys are generated in the token as private, sensitive, non-extractable token objects;
 * only their public half and a reference (a PKCS#11 URI naming the object's label and id) leave
 * it. Signing is one `C_Sign` call on a session that stays logged in.
 *
 * Calls are synchronous: one session, serialised by the event loop. A token signature costs what
 * the token takes (tens of microseconds for SoftHSM, a network round trip for a remote HSM).
 *
 * @module
 */
import { createHash, createPublicKey, randomBytes } from "node:crypto";
import { createRequire } from "node:module";
import type * as Pkcs11Js from "pkcs11js";
import { toUint8Array } from "../../lib/bytes.js";
import type { CaSigningKey, RsaHash } from "../ca-signing-key.js";
import { ecdsaHashOf } from "../ca-signing-key.js";
import type { CaKeySpec } from "../key-types.js";
import { formatKeyReference, type Pkcs11KeyReference, parseKeyReference } from "./key-reference.js";

let addon: typeof Pkcs11Js | undefined;

/**
 * pkcs11js, a CommonJS native addon, loaded when a token is first opened: a server without a
 * token never needs it to load.
 */
function binding(): typeof Pkcs11Js {
  addon ??= createRequire(import.meta.url)("pkcs11js") as typeof Pkcs11Js;
  return addon;
}

// PKCS#11 3.0 values pkcs11js 2.1 does not name.
const CKK_EC_EDWARDS = 0x40;
const CKM_EC_EDWARDS_KEY_PAIR_GEN = 0x1055;
const CKM_EDDSA = 0x1057;

/** DER of the curve OIDs, as CKA_EC_PARAMS takes them. */
const curveParams: Readonly<Record<string, Buffer>> = {
  "P-256": Buffer.from("06082a8648ce3d030107", "hex"),
  "P-384": Buffer.from("06052b81040022", "hex"),
  "P-521": Buffer.from("06052b81040023", "hex"),
  ed25519: Buffer.from("06032b6570", "hex"),
};

/** Which token to use and how to log in to it (the operator's settings). */
export interface Pkcs11TokenOptions {
  /** Path of the PKCS#11 library (e.g. /usr/lib/softhsm/libsofthsm2.so). */
  readonly module: string;
  /** CKA_LABEL of the token (`softhsm2-util --show-slots`, `pkcs11-tool -L`). */
  readonly tokenLabel: string;
  /** The user PIN. */
  readonly pin: string;
}

/** The token cannot be used: library, token or PIN. The message says which, never the PIN. */
export class Pkcs11TokenError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The token has no private key object with the reference an authority stores. */
export class Pkcs11KeyMissingError extends Error {
  readonly reference: string;

  constructor(reference: string) {
    super(`the PKCS#11 token has no private key ${reference}`);
    this.name = new.target.name;
    this.reference = reference;
  }
}

/** A key generated in the token. */
export interface Pkcs11GeneratedKey {
  /** What the authority stores: the PKCS#11 URI of the private key object (UTF-8). */
  readonly reference: Uint8Array;
  readonly key: CaSigningKey;
}

/** A logged-in session on one token. */
export interface Pkcs11Token {
  readonly tokenLabel: string;
  /** Generates a key pair in the token; the private key is a sensitive, non-extractable token object. */
  generateKey(spec: CaKeySpec, label: string): Pkcs11GeneratedKey;
  /**
   * The signing key a stored reference names, its public half given by the caller (from the
   * authority's row: the token keeps no public key object).
   *
   * @throws {Pkcs11KeyMissingError} when the token has no such private key.
   */
  signingKey(reference: Uint8Array, spec: CaKeySpec, publicKeySpkiDer: Uint8Array): CaSigningKey;
  /** Destroys the private key a reference names; no-op when it is gone already. */
  destroyKey(reference: Uint8Array): void;
  /** The attributes of the private key object a reference names, for checks and tests. */
  keyAttributes(reference: Uint8Array): { extractable: boolean; sensitive: boolean; private: boolean };
  /** Logs out and unloads the library. */
  close(): void;
}

const trimmed = (text: string) => text.replace(/[\s\0]+$/, "");

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Loads the library, finds the token by label and logs in as its user.
 *
 * @throws {Pkcs11TokenError} when the library does not load, no token has the label, or the PIN is refused.
 */
export function openPkcs11Token(options: Pkcs11TokenOptions): Pkcs11Token {
  const p11 = loadLibrary(options.module);
  let session: Buffer | undefined;
  try {
    const slot = p11
      .C_GetSlotList(true)
      .find((candidate) => trimmed(p11.C_GetTokenInfo(candidate).label) === options.tokenLabel);
    if (slot === undefined) {
      throw new Pkcs11TokenError(
        `no PKCS#11 token labelled "${options.tokenLabel}" in ${options.module} (the labels are listed by \`pkcs11-tool --module ${options.module} -L\`)`,
      );
    }
    session = p11.C_OpenSession(slot, binding().CKF_SERIAL_SESSION | binding().CKF_RW_SESSION);
    try {
      p11.C_Login(session, binding().CKU_USER, options.pin);
    } catch (cause) {
      if (!(cause instanceof binding().Pkcs11Error && cause.code === binding().CKR_USER_ALREADY_LOGGED_IN)) {
        throw new Pkcs11TokenError(
          `cannot log in to the PKCS#11 token "${options.tokenLabel}": ${describe(cause)}`,
          { cause },
        );
      }
    }
  } catch (error) {
    if (session !== undefined) p11.C_CloseSession(session);
    releaseLibrary(options.module);
    throw error instanceof Pkcs11TokenError
      ? error
      : new Pkcs11TokenError(`cannot open the PKCS#11 token: ${describe(error)}`, { cause: error });
  }
  const s = session;

  function findPrivateKey(ref: Pkcs11KeyReference): Buffer | undefined {
    p11.C_FindObjectsInit(s, [
      { type: binding().CKA_CLASS, value: binding().CKO_PRIVATE_KEY },
      { type: binding().CKA_LABEL, value: ref.label },
      { type: binding().CKA_ID, value: Buffer.from(ref.id) },
    ]);
    try {
      return p11.C_FindObjects(s, 1)[0];
    } finally {
      p11.C_FindObjectsFinal(s);
    }
  }

  function signer(handle: Buffer, spec: CaKeySpec, publicKeySpkiDer: Uint8Array): CaSigningKey {
    const signWith = (mechanism: number, data: Uint8Array, outLength: number): Uint8Array => {
      p11.C_SignInit(s, { mechanism }, handle);
      return toUint8Array(p11.C_Sign(s, Buffer.from(data), Buffer.alloc(outLength)));
    };
    return {
      spec,
      publicKeySpkiDer,
      sign(data: Uint8Array, rsaHash: RsaHash) {
        switch (spec.type) {
          case "ed25519":
            return signWith(CKM_EDDSA, data, 64);
          case "ecdsa": {
            // CKM_ECDSA signs a digest and answers r || s, the IEEE P1363 form.
            const digest = createHash(ecdsaHashOf[spec.curve]).update(data).digest();
            return signWith(binding().CKM_ECDSA, digest, 132);
          }
          case "rsa":
            return signWith(
              rsaHash === "sha256" ? binding().CKM_SHA256_RSA_PKCS : binding().CKM_SHA512_RSA_PKCS,
              data,
              spec.bits / 8,
            );
        }
      },
    };
  }

  return {
    tokenLabel: options.tokenLabel,

    generateKey(spec, label) {
      const ref: Pkcs11KeyReference = { label, id: new Uint8Array(randomBytes(16)) };
      const common = [
        { type: binding().CKA_LABEL, value: label },
        { type: binding().CKA_ID, value: Buffer.from(ref.id) },
      ];
      // The public half is a session object: the authority's row keeps it.
      const publicTemplate: Pkcs11Js.Template = [
        ...common,
        { type: binding().CKA_TOKEN, value: false },
        { type: binding().CKA_VERIFY, value: true },
      ];
      const privateTemplate: Pkcs11Js.Template = [
        ...common,
        { type: binding().CKA_TOKEN, value: true },
        { type: binding().CKA_PRIVATE, value: true },
        { type: binding().CKA_SENSITIVE, value: true },
        { type: binding().CKA_EXTRACTABLE, value: false },
        { type: binding().CKA_SIGN, value: true },
      ];
      let mechanism: number;
      if (spec.type === "rsa") {
        mechanism = binding().CKM_RSA_PKCS_KEY_PAIR_GEN;
        publicTemplate.push(
          { type: binding().CKA_MODULUS_BITS, value: spec.bits },
          { type: binding().CKA_PUBLIC_EXPONENT, value: Buffer.from([1, 0, 1]) },
        );
      } else {
        mechanism = spec.type === "ed25519" ? CKM_EC_EDWARDS_KEY_PAIR_GEN : binding().CKM_EC_KEY_PAIR_GEN;
        const keyType = spec.type === "ed25519" ? CKK_EC_EDWARDS : binding().CKK_EC;
        publicTemplate.push(
          { type: binding().CKA_KEY_TYPE, value: keyType },
          {
            type: binding().CKA_EC_PARAMS,
            value: curveParams[spec.type === "ecdsa" ? spec.curve : "ed25519"]!,
          },
        );
        privateTemplate.push({ type: binding().CKA_KEY_TYPE, value: keyType });
      }
      const pair = p11.C_GenerateKeyPair(s, { mechanism }, publicTemplate, privateTemplate);
      try {
        const publicKeySpkiDer = spkiOf(p11, s, pair.publicKey, spec);
        return { reference: formatKeyReference(ref), key: signer(pair.privateKey, spec, publicKeySpkiDer) };
      } catch (error) {
        p11.C_DestroyObject(s, pair.privateKey);
        throw error;
      } finally {
        p11.C_DestroyObject(s, pair.publicKey);
      }
    },

    signingKey(reference, spec, publicKeySpkiDer) {
      const ref = parseKeyReference(reference);
      const handle = findPrivateKey(ref);
      if (handle === undefined) throw new Pkcs11KeyMissingError(formatKeyReferenceText(reference));
      return signer(handle, spec, publicKeySpkiDer);
    },

    destroyKey(reference) {
      const handle = findPrivateKey(parseKeyReference(reference));
      if (handle !== undefined) p11.C_DestroyObject(s, handle);
    },

    keyAttributes(reference) {
      const handle = findPrivateKey(parseKeyReference(reference));
      if (handle === undefined) throw new Pkcs11KeyMissingError(formatKeyReferenceText(reference));
      const [extractable, sensitive, isPrivate] = p11
        .C_GetAttributeValue(s, handle, [
          { type: binding().CKA_EXTRACTABLE },
          { type: binding().CKA_SENSITIVE },
          { type: binding().CKA_PRIVATE },
        ])
        .map((attribute) => (attribute.value as Buffer)[0] === 1);
      return { extractable: extractable!, sensitive: sensitive!, private: isPrivate! };
    },

    close() {
      try {
        p11.C_Logout(s);
      } catch {
        // Logged out already (another session of this process did it): closing is what matters.
      }
      p11.C_CloseSession(s);
      releaseLibrary(options.module);
    },
  };
}

/** A library is initialised once per process: tokens opened on it share it until the last closes. */
const libraries = new Map<string, { p11: Pkcs11Js.PKCS11; users: number }>();

function loadLibrary(module: string): Pkcs11Js.PKCS11 {
  const loaded = libraries.get(module);
  if (loaded !== undefined) {
    loaded.users++;
    return loaded.p11;
  }
  let p11: Pkcs11Js.PKCS11;
  try {
    p11 = new (binding().PKCS11)();
    p11.load(module);
    p11.C_Initialize();
  } catch (cause) {
    throw new Pkcs11TokenError(`cannot load the PKCS#11 library ${module}: ${describe(cause)}`, { cause });
  }
  libraries.set(module, { p11, users: 1 });
  return p11;
}

function releaseLibrary(module: string): void {
  const loaded = libraries.get(module);
  if (loaded === undefined || --loaded.users > 0) return;
  libraries.delete(module);
  loaded.p11.C_Finalize();
  loaded.p11.close();
}

function formatKeyReferenceText(reference: Uint8Array): string {
  return new TextDecoder().decode(reference);
}

/** CKA_EC_POINT is a DER OCTET STRING around the point (some tokens give the bare point). */
function unwrapOctetString(value: Buffer, bareLength: number): Buffer {
  if (value.length === bareLength || value[0] !== 0x04) return value;
  let at = 2;
  let length = value[1]!;
  if (length & 0x80) {
    const bytes = length & 0x7f;
    length = value.subarray(2, 2 + bytes).reduce((n, b) => n * 256 + b, 0);
    at = 2 + bytes;
  }
  if (at + length !== value.length) throw new TypeError("the token's CKA_EC_POINT is not a DER octet string");
  return value.subarray(at);
}

const keyBitsOfCurve = { "P-256": 256, "P-384": 384, "P-521": 521 } as const;

const b64url = (bytes: Buffer) => bytes.toString("base64url");

/** The SubjectPublicKeyInfo of a public key object in the token. */
function spkiOf(p11: Pkcs11Js.PKCS11, session: Buffer, handle: Buffer, spec: CaKeySpec): Uint8Array {
  let jwk: Record<string, string>;
  if (spec.type === "rsa") {
    const [n, e] = p11
      .C_GetAttributeValue(session, handle, [
        { type: binding().CKA_MODULUS },
        { type: binding().CKA_PUBLIC_EXPONENT },
      ])
      .map((attribute) => attribute.value as Buffer);
    jwk = { kty: "RSA", n: b64url(n!), e: b64url(e!) };
  } else {
    // Ed25519: 32 bytes; ECDSA: an uncompressed point, 0x04 || x || y.
    const bareLength = spec.type === "ed25519" ? 32 : 1 + 2 * Math.ceil(keyBitsOfCurve[spec.curve] / 8);
    const [point] = p11
      .C_GetAttributeValue(session, handle, [{ type: binding().CKA_EC_POINT }])
      .map((attribute) => unwrapOctetString(attribute.value as Buffer, bareLength));
    if (spec.type === "ed25519") {
      jwk = { kty: "OKP", crv: "Ed25519", x: b64url(point!) };
    } else {
      const size = (point!.length - 1) / 2;
      jwk = {
        kty: "EC",
        crv: spec.curve,
        x: b64url(point!.subarray(1, 1 + size)),
        y: b64url(point!.subarray(1 + size)),
      };
    }
  }
  return toUint8Array(createPublicKey({ key: jwk, format: "jwk" }).export({ type: "spki", format: "der" }));
}
