/** Strict base64 and base64url: from @wap/ssh-wire, where the wire formats that need them live. */
export {
  decodeBase64Lenient,
  decodeBase64Url,
  encodeBase64,
  encodeBase64NoPad,
  encodeBase64Url,
} from "@wap/ssh-wire/encoding";
