/**
 * An agent daemon's key and the `Platform` challenge it signs each call with (docs/agent-protocol.md):
 * `<daemon id>:<unix seconds>:<nonce>:<procedure>:<P-256 signature, DER, base64url>`.
 */
import { generateKeyPairSync, type KeyObject, randomBytes, sign } from "node:crypto";

export interface DaemonKey {
  readonly privateKey: KeyObject;
  readonly pem: string;
}

/** A P-256 key pair, the public half as PEM SPKI (what the daemon sends as `authPubkey`). */
export function aDaemonKey(): DaemonKey {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  return { privateKey, pem: publicKey.export({ type: "spki", format: "pem" }).toString() };
}

/** `<id>:<ts>:<nonce>:<procedure>:<sig>` exactly as the daemon builds it, signed now unless `at` says otherwise. */
export function signChallenge(
  key: DaemonKey,
  id: string,
  procedure: string,
  options: { at?: Date; nonce?: string } = {},
): string {
  const seconds = Math.floor((options.at ?? new Date()).getTime() / 1000);
  const nonce = options.nonce ?? randomBytes(12).toString("hex");
  const signed = `${id}:${seconds}:${nonce}:${procedure}`;
  const signature = sign("sha256", Buffer.from(signed), { key: key.privateKey, dsaEncoding: "der" });
  return `${signed}:${signature.toString("base64url")}`;
}
