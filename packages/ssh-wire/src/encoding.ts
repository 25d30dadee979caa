/**
 * @wap/ssh-wire/encoding: the byte encodings under the wire formats (strict base64 and base64url,
 * UTF-8 and byte helpers, PEM armour), for the platform's own packages.
 *
 * @module
 */
export {
  decodeBase64Lenient,
  decodeBase64Url,
  encodeBase64,
  encodeBase64NoPad,
  encodeBase64Url,
} from "./base64.js";
export { concatBytes, fromUtf8, stripLeadingZeros, toHex, toUint8Array, utf8 } from "./bytes.js";
export { fromPem, toPem } from "./pem.js";
