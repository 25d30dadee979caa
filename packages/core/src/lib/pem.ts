/** PEM armour (RFC 7468): from @wap/ssh-wire, where the OpenSSH private key format needs it. */
export { fromPem, toPem } from "@wap/ssh-wire/encoding";
