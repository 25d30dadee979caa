/**
 * @wap/ssh-wire: the OpenSSH wire formats the platform's programs share (RFC 4251 values, public
 * and private key encodings, reading a certificate's public facts), on node:crypto alone. The
 * CLI and the host agent use it without loading the server's core; the core signs with it.
 *
 * @module
 */
export type { SshKeyAlgorithm } from "./public-key.js";
export {
  opensshPrivateKey,
  spkiOfSshPublicKeyLine,
  sshFingerprintSha256,
  sshKeyAlgorithmOf,
  sshPublicKeyBlob,
  sshPublicKeyLine,
} from "./public-key.js";
export type { SshCertificateInfo } from "./read-certificate.js";
export { readSshCertificate } from "./read-certificate.js";
export { SshReader, SshWriter } from "./wire.js";
