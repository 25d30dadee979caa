import type { KeyStore } from "../crypto/key-store.js";
import type { Clock } from "../runtime.js";
import type { Storage } from "../storage/storage.js";
import { createAccessTokenSigner, createAccessTokenVerifier } from "../tokens/paseto.js";
import { cacheVerified } from "../tokens/verified-cache.js";
import { loadSigningKey } from "./signing-keys.js";

/** The name under which the PASETO signing key is kept (sealed) in storage. */
const signingKeySecret = "access-token-signing-key";

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
  const { privateKeyPkcs8Der, publicKeySpkiDer, keyId } = await loadSigningKey(deps, signingKeySecret);
  const signer = createAccessTokenSigner({ privateKeyPkcs8Der, keyId });
  const verifier = createAccessTokenVerifier({ keys: [{ keyId, publicKeySpkiDer }] });
  // Expiry and session revocation are still checked on every use (authenticate.ts).
  const verify = cacheVerified(async (token, now) => {
    const claims = await verifier.verify(token, now);
    return { userId: claims.sub, sessionId: claims.sid, expiresAt: claims.exp };
  });
  return {
    async issue(userId, sessionId, now) {
      const token = await signer.sign(
        { sub: userId, sid: sessionId, typ: "access" },
        { now, ttlSeconds: deps.ttlSeconds },
      );
      return { token, expiresAt: new Date(now.getTime() + deps.ttlSeconds * 1000) };
    },
    verify,
  };
}
