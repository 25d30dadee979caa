/**
 * @wap/core/ssh-keys: the OpenSSH key encodings for clients (a CLI writing its keys for `ssh` and
 * `ssh-add`), without loading the rest of the core.
 *
 * @module
 */
export { opensshPrivateKey, sshPublicKeyLine } from "./crypto/ssh/public-key.js";
export type { SshCertificateInfo } from "./crypto/ssh/read-certificate.js";
export { readSshCertificate } from "./crypto/ssh/read-certificate.js";
