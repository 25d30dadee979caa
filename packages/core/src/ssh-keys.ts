/**
 * @wap/core/ssh-keys: the OpenSSH key encodings for clients, kept for code that imported them
 * from the core. They live in @wap/ssh-wire, which is what clients should depend on.
 *
 * @module
 */
export type { SshCertificateInfo } from "@wap/ssh-wire";
export { opensshPrivateKey, readSshCertificate, sshPublicKeyLine } from "@wap/ssh-wire";
