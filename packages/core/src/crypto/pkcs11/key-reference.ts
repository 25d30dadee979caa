/**
 * What an authority stores of a key in a PKCS#11 token: a PKCS#11 URI (RFC 7512) naming the
 * private key object by label and id, e.g. `pkcs11:object=wap-ca-<id>-v1;id=%0f%a3...;type=private`.
 * Operators can hand the same URI to p11tool or pkcs11-tool. The token is the server's setting,
 * not part of the reference, so a token restored under another label keeps working.
 *
 * @module
 */
import { utf8 } from "../../lib/bytes.js";

/** A private key object in the token. */
export interface Pkcs11KeyReference {
  /** CKA_LABEL. */
  readonly label: string;
  /** CKA_ID. */
  readonly id: Uint8Array;
}

/** A stored reference that is not a PKCS#11 URI with an object label and id. */
export class InvalidKeyReferenceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

const percentAll = (bytes: Uint8Array) =>
  Array.from(bytes, (b) => `%${b.toString(16).padStart(2, "0")}`).join("");

/** The reference as the authority's row stores it: the URI in UTF-8. */
export function formatKeyReference(ref: Pkcs11KeyReference): Uint8Array {
  return utf8(`pkcs11:object=${encodeURIComponent(ref.label)};id=${percentAll(ref.id)};type=private`);
}

/** Reads a stored reference back. */
export function parseKeyReference(stored: Uint8Array): Pkcs11KeyReference {
  const text = new TextDecoder().decode(stored);
  if (!text.startsWith("pkcs11:")) {
    throw new InvalidKeyReferenceError("stored key reference is not a pkcs11: URI");
  }
  const attributes = new Map<string, string>();
  for (const part of text.slice("pkcs11:".length).split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0) attributes.set(part.slice(0, eq), part.slice(eq + 1));
  }
  const label = attributes.get("object");
  const id = attributes.get("id");
  if (label === undefined || id === undefined || !/^(%[0-9a-fA-F]{2})+$/.test(id)) {
    throw new InvalidKeyReferenceError(`stored key reference ${text} lacks an object label or id`);
  }
  let decoded: string;
  try {
    decoded = decodeURIComponent(label);
  } catch {
    throw new InvalidKeyReferenceError(`stored key reference ${text} has a malformed object label`);
  }
  return {
    label: decoded,
    id: Uint8Array.from(id.slice(1).split("%"), (hex) => Number.parseInt(hex, 16)),
  };
}
