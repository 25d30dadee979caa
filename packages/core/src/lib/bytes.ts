/** Small Uint8Array helpers: from @wap/ssh-wire, where the wire formats that need them live. */
export { concatBytes, fromUtf8, stripLeadingZeros, toHex, toUint8Array, utf8 } from "@wap/ssh-wire/encoding";
