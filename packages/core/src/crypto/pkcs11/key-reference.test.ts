import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { formatKeyReference, InvalidKeyReferenceError, parseKeyReference } from "./key-reference.js";

describe("PKCS#11 key references", () => {
  it("read back what was written, for any label and id", () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1 }),
        fc.uint8Array({ minLength: 1, maxLength: 64 }),
        (label, id) => {
          const parsed = parseKeyReference(formatKeyReference({ label, id }));
          expect(parsed.label).toBe(label);
          expect(Array.from(parsed.id)).toEqual(Array.from(id));
        },
      ),
    );
  });

  it("refuse anything else with InvalidKeyReferenceError only", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array(),
          fc.string().map((text) => new TextEncoder().encode(`pkcs11:${text}`)),
          fc.string().map((text) => new TextEncoder().encode(`pkcs11:object=${text};id=%0`)),
        ),
        (bytes) => {
          try {
            parseKeyReference(bytes);
          } catch (error) {
            expect(error).toBeInstanceOf(InvalidKeyReferenceError);
          }
        },
      ),
    );
    expect(() => parseKeyReference(new TextEncoder().encode("pkcs11:object=%zz;id=%01"))).toThrow(
      InvalidKeyReferenceError,
    );
  });
});
