/**
 * The fields of a host certificate the agent checks before handing it to sshd, as key blobs it
 * compares byte for byte; the certificate itself is read by @wap/ssh-wire.
 *
 * @module
 */
import { readSshCertificate } from "@wap/ssh-wire";

/** The base64 blob of an authorized_keys line (`<type> <base64> [comment]`). */
export function keyBlobOf(line: string): Buffer {
  return Buffer.from(line.trim().split(/\s+/)[1] ?? "", "base64");
}

export interface SshCertificate {
  readonly certType: "user" | "host";
  /** The certified public key, as a key blob. */
  readonly keyBlob: Buffer;
  readonly principals: readonly string[];
  readonly validAfter: Date;
  readonly validBefore: Date;
  /** The blob of the CA key that signed it. */
  readonly signatureKey: Buffer;
}

/** Reads an OpenSSH certificate line. Throws on anything that is not one. */
export function parseSshCertificate(line: string): SshCertificate {
  const certificate = readSshCertificate(line);
  return {
    certType: certificate.type,
    keyBlob: keyBlobOf(certificate.publicKey),
    principals: certificate.principals,
    validAfter: certificate.validAfter,
    validBefore: certificate.validBefore,
    signatureKey: keyBlobOf(certificate.caPublicKey),
  };
}
