/**
 * Secrets at rest: CA private keys and token signing keys are sealed with a master key before
 * they reach storage.
 *
 * Envelope (version 1):
 *
 * ```
 * 0x01 | keyIdLength (1 byte) | keyId (ASCII) | nonce (12 bytes) | AES-256-GCM ciphertext | tag (16 bytes)
 * ```
 *
 * The additional authenticated data is the header (version, key id) followed by the caller's
 * context, so a sealed value only opens under the same context (a CA key sealed for one row does
 * not open as another row's key) and a header edit fails authentication.
 *
 * @module
 */
import { createHash, webcrypto } from "node:crypto";
import { decodeBase64Lenient, encodeBase64Url } from "../lib/base64.js";
import { concatBytes, toHex, toUint8Array, utf8 } from "../lib/bytes.js";

const VERSION = 1;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const MASTER_KEY_BYTES = 32;
const KEY_ID_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;

/** Seals and opens secrets; the storage-facing side of the master key. */
export interface KeyStore {
  /** Encrypts `plaintext`, binding it to `context` (e.g. `ca-key:<ca id>`). */
  seal(plaintext: Uint8Array, context: string): Promise<Uint8Array>;
  /** Decrypts what `seal` produced under the same context, or throws {@link SealedDataError}. */
  open(sealed: Uint8Array, context: string): Promise<Uint8Array>;
}

/** Why sealed data could not be opened. */
export type SealedDataErrorReason = "malformed" | "unsupported_version" | "unknown_key" | "authentication";

/**
 * Sealed data could not be opened: it is truncated, from an unknown format version or master key,
 * or it fails authentication (tampered, wrong context, or wrong key under the same id).
 */
export class SealedDataError extends Error {
  readonly reason: SealedDataErrorReason;

  constructor(reason: SealedDataErrorReason, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
    this.reason = reason;
  }
}

/** A master key in configuration that is not 32 bytes of base64 or base64url. */
export class InvalidMasterKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** A master key and the id sealed values name it by. */
export interface MasterKey {
  readonly masterKey: Uint8Array;
  /** Defaults to a fingerprint of the key (see {@link masterKeyId}). */
  readonly keyId?: string;
}

export interface MasterKeyStoreOptions extends MasterKey {
  /** Retired master keys that `open` still accepts during a rotation; `seal` always uses `masterKey`. */
  readonly previousKeys?: readonly MasterKey[];
}

/**
 * The default key id: 16 hex digits of a domain-separated SHA-256 of the key. It lets `open` tell
 * "wrong master key" from "tampered data" without revealing anything usable about the key.
 */
export function masterKeyId(masterKey: Uint8Array): string {
  assertMasterKey(masterKey);
  const digest = createHash("sha256").update("wap master key id\0").update(masterKey).digest();
  return toHex(toUint8Array(digest).subarray(0, 8));
}

function assertMasterKey(masterKey: Uint8Array): void {
  if (!(masterKey instanceof Uint8Array) || masterKey.length !== MASTER_KEY_BYTES) {
    throw new InvalidMasterKeyError(`master key must be exactly ${MASTER_KEY_BYTES} bytes`);
  }
}

/** Generates a random 32-byte master key. */
export function generateMasterKey(): Uint8Array {
  return webcrypto.getRandomValues(new Uint8Array(MASTER_KEY_BYTES));
}

/** Encodes a master key for a configuration file or environment variable (base64url, no padding). */
export function formatMasterKey(masterKey: Uint8Array): string {
  assertMasterKey(masterKey);
  return encodeBase64Url(masterKey);
}

/**
 * Parses a master key from configuration: base64 or base64url (padding optional) of exactly 32
 * bytes. Surrounding whitespace, such as a file's trailing newline, is ignored.
 *
 * @example
 * const masterKey = parseMasterKey(process.env.WAP_MASTER_KEY ?? "");
 */
export function parseMasterKey(text: string): Uint8Array {
  const trimmed = text.trim();
  if (trimmed === "")
    throw new InvalidMasterKeyError("master key is empty; expected 32 bytes as base64 or base64url");
  const bytes = decodeBase64Lenient(trimmed);
  if (bytes === undefined) throw new InvalidMasterKeyError("master key is not valid base64 or base64url");
  if (bytes.length !== MASTER_KEY_BYTES) {
    throw new InvalidMasterKeyError(
      `master key must decode to exactly ${MASTER_KEY_BYTES} bytes (got ${bytes.length}); generate one with \`openssl rand -base64 32\``,
    );
  }
  return bytes;
}

interface ResolvedKey {
  readonly id: string;
  readonly header: Uint8Array;
  readonly cryptoKey: Promise<webcrypto.CryptoKey>;
}

function resolveKey({ masterKey, keyId }: MasterKey): ResolvedKey {
  assertMasterKey(masterKey);
  const id = keyId ?? masterKeyId(masterKey);
  if (!KEY_ID_PATTERN.test(id))
    throw new InvalidMasterKeyError("keyId must be 1-64 characters of [A-Za-z0-9._-]");
  const idBytes = utf8(id);
  return {
    id,
    header: concatBytes(new Uint8Array([VERSION, idBytes.length]), idBytes),
    // Imported once; not extractable, so the raw key does not linger in WebCrypto's reach.
    cryptoKey: webcrypto.subtle.importKey("raw", new Uint8Array(masterKey), "AES-GCM", false, [
      "encrypt",
      "decrypt",
    ]),
  };
}

/**
 * A KeyStore backed by a 32-byte master key (AES-256-GCM with random 96-bit nonces).
 *
 * @example
 * const keyStore = createMasterKeyStore({ masterKey: parseMasterKey(config.masterKey) });
 * const sealed = await keyStore.seal(caKey.privateKeyPkcs8Der, `ca-key:${caId}`);
 */
export function createMasterKeyStore(options: MasterKeyStoreOptions): KeyStore {
  const current = resolveKey(options);
  const byId = new Map<string, ResolvedKey>([[current.id, current]]);
  for (const previous of options.previousKeys ?? []) {
    const resolved = resolveKey(previous);
    if (byId.has(resolved.id)) throw new InvalidMasterKeyError(`duplicate master key id ${resolved.id}`);
    byId.set(resolved.id, resolved);
  }

  return {
    async seal(plaintext, context) {
      const nonce = webcrypto.getRandomValues(new Uint8Array(NONCE_BYTES));
      const ciphertext = await webcrypto.subtle.encrypt(
        { name: "AES-GCM", iv: nonce, additionalData: concatBytes(current.header, utf8(context)) },
        await current.cryptoKey,
        plaintext,
      );
      return concatBytes(current.header, nonce, new Uint8Array(ciphertext));
    },

    async open(sealed, context) {
      if (!(sealed instanceof Uint8Array) || sealed.length < 2) {
        throw new SealedDataError("malformed", "sealed data is truncated");
      }
      if (sealed[0] !== VERSION) {
        throw new SealedDataError(
          "unsupported_version",
          `sealed data has unknown format version ${sealed[0]}`,
        );
      }
      const idLength = sealed[1]!;
      const headerLength = 2 + idLength;
      if (idLength === 0 || sealed.length < headerLength + NONCE_BYTES + TAG_BYTES) {
        throw new SealedDataError("malformed", "sealed data is truncated");
      }
      const id = new TextDecoder().decode(sealed.subarray(2, headerLength));
      const key = byId.get(id);
      if (key === undefined) {
        throw new SealedDataError(
          "unknown_key",
          `sealed data names master key "${id}", which is not configured`,
        );
      }
      const nonce = sealed.subarray(headerLength, headerLength + NONCE_BYTES);
      try {
        const plaintext = await webcrypto.subtle.decrypt(
          {
            name: "AES-GCM",
            iv: nonce,
            additionalData: concatBytes(sealed.subarray(0, headerLength), utf8(context)),
          },
          await key.cryptoKey,
          sealed.subarray(headerLength + NONCE_BYTES),
        );
        return new Uint8Array(plaintext);
      } catch (cause) {
        throw new SealedDataError(
          "authentication",
          "sealed data failed authentication (tampered, wrong context or wrong master key)",
          { cause },
        );
      }
    },
  };
}
