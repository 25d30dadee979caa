/**
 * @wap/core/ssh-keys: what a client writing files for `ssh` and `ssh-add` needs from the core,
 * without loading the rest of it: the OpenSSH key encodings, and the server's own rules for the
 * strings it hands to ssh (endpoints, login and target names, control characters), so a client
 * checks again what a server sent before any of it reaches ssh or a terminal.
 *
 * @module
 */
export { opensshPrivateKey, sshPublicKeyLine } from "./crypto/ssh/public-key.js";
export type { SshCertificateInfo } from "./crypto/ssh/read-certificate.js";
export { readSshCertificate } from "./crypto/ssh/read-certificate.js";
export { loginNamePattern, resourceNamePattern } from "./validation/bounds.js";
export type { EndpointParts } from "./validation/endpoint.js";
export { endpointForm, parseEndpoint } from "./validation/endpoint.js";
export { controlCharacters, hasControlCharacters } from "./validation/rules.js";
