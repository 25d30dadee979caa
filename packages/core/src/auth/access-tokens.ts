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
import { createAccessTokenSigner, createAccessTokenVerifier } from "../tokens/paseto.js";

const generateKeyPair = promisify(generateKeyPairCallback);

/** The name under which the PASETO signing key is kept (sealed) in storage. */
const signingKeySecret = "access-token-signing-key";

/** The key store context of a server secret: bound to its name. */
export const secretContext = (name: string): string => `secret:${name}`;

/** Issues and checks the short-lived PASETO v4.public access tokens of signed-in users. */
export interface AccessTokens {
  issue(userId: string, sessionId: string, now: Date): Promise<{ token: string; expiresAt: Date }>;
  /** Throws `InvalidAccessTokenError` for anything but a valid, unexpired token of ours. */
  verify(token: string, now: Date): Promise<{ userId: string; sessionId: string; expiresAt: Date }>;
}

/**
 * Loads the signing key from storage, creating it on first start. Every server instance over the
 * same database ends up with the same key (the first writer wins), so tokens work on all of them.
 */
export async function loadAccessTokens(deps: {
  storage: Storage;
  keyStore: KeyStore;
  clock: Clock;
  ttlSeconds: number;
}): Promise<AccessTokens> {
  const context = secretContext(signingKeySecret);
  let stored = await deps.storage.secrets.find(signingKeySecret);
  if (!stored) {
    const { privateKey } = await generateKeyPair("ed25519");
    const pkcs8 = new Uint8Array(privateKey.export({ type: "pkcs8", format: "der" }));
    stored = await deps.storage.secrets.insertIfAbsent({
      name: signingKeySecret,
      sealed: await deps.keyStore.seal(pkcs8, context),
      createdAt: deps.clock.now(),
    });
  }
  const privateKeyPkcs8Der = await deps.keyStore.open(stored.sealed, context);
  const publicKeySpkiDer = new Uint8Array(
    createPublicKey(
      createPrivateKey({ key: Buffer.from(privateKeyPkcs8Der), format: "der", type: "pkcs8" }),
    ).export({
      type: "spki",
      format: "der",
    }),
  );
  const keyId = createHash("sha256").update(publicKeySpkiDer).digest("hex").slice(0, 16);
  const signer = createAccessTokenSigner({ privateKeyPkcs8Der, keyId });
  const verifier = createAccessTokenVerifier({ keys: [{ keyId, publicKeySpkiDer }] });
  // A token never changes, so a signature checked once stays checked until the token expires.
  // The cache spares the ~0.2 ms signature check on every request of a busy client; expiry and
  // session revocation are still checked on every use.
  const verified = new Map<string, { userId: string; sessionId: string; expiresAt: Date }>();
  const maxCached = 10_000;
  return {
    async issue(userId, sessionId, now) {
      const token = await signer.sign(
        { sub: userId, sid: sessionId, typ: "access" },
        { now, ttlSeconds: deps.ttlSeconds },
      );
      return { token, expiresAt: new Date(now.getTime() + deps.ttlSeconds * 1000) };
    },
    async verify(token, now) {
      const hit = verified.get(token);
      if (hit && hit.expiresAt > now) return hit;
      const claims = await verifier.verify(token, now);
      const result = { userId: claims.sub, sessionId: claims.sid, expiresAt: claims.exp };
      if (verified.size >= maxCached) verified.delete(verified.keys().next().value as string);
      verified.set(token, result);
      return result;
    },
  };
}
