/**
 * Signed checkpoints of a workspace's audit chain: the chain's head (position and hash) signed
 * with the workspace's Ed25519 audit key, whose private half is sealed with the master key like a
 * CA key's. A checkpoint's message is plain text, so `openssl pkeyutl -verify -rawin` checks it
 * with the public key alone.
 *
 * ```
 * wap-audit-checkpoint-v1
 * workspace: <workspace id>
 * position: <n>
 * hash: <hash(n), lower-case hex>
 * signed-at: <ISO 8601 UTC, milliseconds>
 * ```
 *
 * (each line ends with a newline).
 *
 * @module
 */
import { createPublicKey, type KeyObject, verify } from "node:crypto";
import type { Checkpoint } from "./entry.js";

export function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex");
}

/** The bytes a checkpoint's signature covers. */
export function checkpointMessage(checkpoint: Omit<Checkpoint, "signature">): Uint8Array {
  return new TextEncoder().encode(
    "wap-audit-checkpoint-v1\n" +
      `workspace: ${checkpoint.workspaceId}\n` +
      `position: ${checkpoint.position}\n` +
      `hash: ${hex(checkpoint.hash)}\n` +
      `signed-at: ${checkpoint.signedAt.toISOString()}\n`,
  );
}

/** A raw 32-byte Ed25519 public key as a key object. */
function publicKeyOf(raw: Uint8Array): KeyObject {
  return createPublicKey({
    key: { kty: "OKP", crv: "Ed25519", x: Buffer.from(raw).toString("base64url") },
    format: "jwk",
  });
}

/** The PEM (SubjectPublicKeyInfo) of a raw Ed25519 public key: what `openssl -pubin` reads. */
export function auditPublicKeyPem(raw: Uint8Array): string {
  return publicKeyOf(raw).export({ type: "spki", format: "pem" }).toString();
}

/** The raw 32 bytes of an Ed25519 public key given as PEM, or null when it is not one. */
export function rawAuditPublicKey(pem: string): Uint8Array | null {
  try {
    const key = createPublicKey(pem);
    if (key.asymmetricKeyType !== "ed25519") return null;
    const x = key.export({ format: "jwk" }).x;
    return x === undefined ? null : new Uint8Array(Buffer.from(x, "base64url"));
  } catch {
    return null;
  }
}

/** True when `signature` is the workspace key's signature of the checkpoint. */
export function checkpointVerifies(checkpoint: Checkpoint, publicKey: Uint8Array): boolean {
  try {
    return verify(null, checkpointMessage(checkpoint), publicKeyOf(publicKey), checkpoint.signature);
  } catch {
    return false;
  }
}
