/**
 * How one server instance proves to another that it may attach a browser to a session the other
 * relays: a short-lived token sealed with the master key every instance shares (AES-256-GCM
 * through the key store), bound to the session and to the instance it is meant for. Only an
 * instance holding the master key can make one; each is good once, for {@link relayTokenTtlMs}.
 * It travels in the {@link relayTokenHeader} request header, never in a URL.
 *
 * @module
 */
import { randomBytes } from "node:crypto";
import type { KeyStore } from "@wap/core";

export const relayTokenHeader = "x-wap-relay-token";
export const relayTokenTtlMs = 30_000;

const contextOf = (sessionId: string, instanceId: string) =>
  `wap.session-relay.v1:${sessionId}:${instanceId}`;

/** A token letting its bearer attach to `sessionId` on instance `instanceId` until `now + ttl`. */
export async function mintRelayToken(
  keyStore: KeyStore,
  target: { readonly sessionId: string; readonly instanceId: string },
  now: Date,
): Promise<string> {
  const claims = { exp: now.getTime() + relayTokenTtlMs, nonce: randomBytes(16).toString("base64url") };
  const sealed = await keyStore.seal(
    new TextEncoder().encode(JSON.stringify(claims)),
    contextOf(target.sessionId, target.instanceId),
  );
  return Buffer.from(sealed).toString("base64url");
}

/** Checks tokens on the relaying instance, remembering the ones used until they expire. */
export interface RelayTokenVerifier {
  /** True once for a token minted for this session and instance that has not expired. */
  verify(token: string, sessionId: string, now: Date): Promise<boolean>;
}

export function createRelayTokenVerifier(keyStore: KeyStore, instanceId: string): RelayTokenVerifier {
  const used = new Map<string, number>();
  return {
    async verify(token, sessionId, now) {
      if (!/^[A-Za-z0-9_-]{1,4096}$/.test(token)) return false;
      let claims: unknown;
      try {
        const opened = await keyStore.open(Buffer.from(token, "base64url"), contextOf(sessionId, instanceId));
        claims = JSON.parse(new TextDecoder().decode(opened));
      } catch {
        return false;
      }
      const { exp, nonce } = (claims ?? {}) as { exp?: unknown; nonce?: unknown };
      if (typeof exp !== "number" || typeof nonce !== "string" || exp <= now.getTime()) return false;
      for (const [seen, expiry] of used) if (expiry <= now.getTime()) used.delete(seen);
      if (used.has(nonce)) return false;
      used.set(nonce, exp);
      return true;
    },
  };
}
