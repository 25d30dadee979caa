/**
 * Ed25519 token signing keys kept sealed in storage under a name. The first instance to start
 * creates a key; every instance over the same database then loads the same one (the first writer
 * wins). A master key rotation re-seals the key but never changes it, so tokens it signed keep
 * verifying.
 *
 * @module
 */
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPair as generateKeyPairCallback,
} from "node:crypto";
import { promisify } from "node:util";
import type { KeyStore } from "../crypto/key-store.js";
import type { Clock } from "../runtime.js";
import type { Storage } from "../storage/storage.js";

const generateKeyPair = promisify(generateKeyPairCallback);

/** The key store context of a server secret: bound to its name. */
export const secretContext = (name: string): string => `secret:${name}`;

export interface SigningKeyDeps {
  readonly storage: Storage;
  readonly keyStore: KeyStore;
  readonly clock: Clock;
}

export interface SigningKey {
  readonly privateKeyPkcs8Der: Uint8Array;
  readonly publicKeySpkiDer: Uint8Array;
  /** 16 hex digits of SHA-256 of the public key: what token footers name the key by. */
  readonly keyId: string;
}

/** Loads the Ed25519 key sealed under `name`, creating it on first start. */
export async function loadSigningKey(deps: SigningKeyDeps, name: string): Promise<SigningKey> {
  const context = secretContext(name);
  let stored = await deps.storage.secrets.find(name);
  if (!stored) {
    const { privateKey } = await generateKeyPair("ed25519");
    const pkcs8 = new Uint8Array(privateKey.export({ type: "pkcs8", format: "der" }));
    stored = await deps.storage.secrets.insertIfAbsent({
      name,
      sealed: await deps.keyStore.seal(pkcs8, context),
      createdAt: deps.clock.now(),
    });
  }
  const privateKeyPkcs8Der = await deps.keyStore.open(stored.sealed, context);
  const publicKeySpkiDer = new Uint8Array(
    createPublicKey(
      createPrivateKey({ key: Buffer.from(privateKeyPkcs8Der), format: "der", type: "pkcs8" }),
    ).export({ type: "spki", format: "der" }),
  );
  const keyId = createHash("sha256").update(publicKeySpkiDer).digest("hex").slice(0, 16);
  return { privateKeyPkcs8Der, publicKeySpkiDer, keyId };
}
