/**
 * SSH keys the benchmarks sign certificates for.
 *
 * @module
 */
import { generateKeyPairSync } from "node:crypto";

/** An OpenSSH authorized_keys line for a fresh Ed25519 key. */
export function ed25519PublicKeyLine(comment: string): string {
  const spki = generateKeyPairSync("ed25519").publicKey.export({ type: "spki", format: "der" });
  const field = (bytes: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(bytes.length);
    return Buffer.concat([length, bytes]);
  };
  const blob = Buffer.concat([field(Buffer.from("ssh-ed25519")), field(spki.subarray(spki.length - 32))]);
  return `ssh-ed25519 ${blob.toString("base64")} ${comment}`;
}
