/** Reading and rewriting PASETO v4.public tokens as an attacker without the key can, and signing with a key of one's own. */
import { generateKeyPairSync, webcrypto } from "node:crypto";
import { PublicProtocol } from "paseto";
import { SecretKeyFromCryptoKey, SignFactory, VerifyFactory } from "paseto/v4/public";

/** The claims of a v4.public token (read, not verified): its payload is the claims, then a 64-byte signature. */
export function pasetoClaims(token: string): Record<string, string> {
  const bytes = Buffer.from(token.split(".")[2]!, "base64url");
  return JSON.parse(bytes.subarray(0, -64).toString()) as Record<string, string>;
}

/** `token` with some claims replaced and its signature and footer kept. */
export function rewrittenClaims(token: string, replace: Record<string, string>): string {
  const [, , payload, footer] = token.split(".") as [string, string, string, string];
  const signature = Buffer.from(payload, "base64url").subarray(-64);
  const message = Buffer.from(JSON.stringify({ ...pasetoClaims(token), ...replace }));
  return `v4.public.${Buffer.concat([message, signature]).toString("base64url")}.${footer}`;
}

/**
 * A v4.public token of `claims` signed by a fresh Ed25519 key, whose footer names `keyId`: a
 * forgery that is perfect but for the key. Expires `expiresIn` seconds from `now`, or never.
 */
export async function signedByAnotherKey(
  claims: Record<string, string>,
  options: { keyId: string; now: Date; expiresIn?: number; implicitAssertion?: string },
): Promise<string> {
  const { privateKey } = generateKeyPairSync("ed25519");
  const key = await webcrypto.subtle.importKey(
    "pkcs8",
    privateKey.export({ type: "pkcs8", format: "der" }),
    { name: "Ed25519" },
    true,
    ["sign"],
  );
  const encode = (text: string) => new TextEncoder().encode(text);
  return new PublicProtocol(SignFactory, VerifyFactory).Sign(
    await SecretKeyFromCryptoKey(key as Parameters<typeof SecretKeyFromCryptoKey>[0]),
    claims,
    {
      now: options.now,
      footer: encode(JSON.stringify({ kid: options.keyId })),
      ...(options.expiresIn === undefined ? { nonExpiring: true } : { expiresIn: options.expiresIn }),
      ...(options.implicitAssertion !== undefined && {
        implicitAssertion: encode(options.implicitAssertion),
      }),
    },
  );
}
