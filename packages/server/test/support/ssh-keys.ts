import { generateKeyPairSync } from "node:crypto";

/** A fresh OpenSSH Ed25519 public key line (`ssh-ed25519 AAAA... <comment>`). */
export function sshEd25519PublicKey(comment = "test@host"): string {
  const { publicKey } = generateKeyPairSync("ed25519");
  const raw = Buffer.from(publicKey.export({ format: "jwk" }).x!, "base64url");
  const part = (data: Buffer) => Buffer.concat([Buffer.from([0, 0, 0, data.length]), data]);
  return `ssh-ed25519 ${Buffer.concat([part(Buffer.from("ssh-ed25519")), part(raw)]).toString("base64")} ${comment}`;
}
