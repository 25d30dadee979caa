import * as fc from "fast-check";
import { describe, expect, it } from "vitest";
import { allCaKeySpecs, KeySpecError, keyBitsOf, keyTypeOf, resolveKeySpec } from "./key-types.js";

describe("resolveKeySpec", () => {
  it("applies the defaults when keyBits is unset or 0", () => {
    for (const bits of [undefined, 0]) {
      expect(resolveKeySpec("RSA", bits)).toEqual({ type: "rsa", bits: 3072 });
      expect(resolveKeySpec("ECDSA", bits)).toEqual({ type: "ecdsa", curve: "P-256" });
      expect(resolveKeySpec("ED25519", bits)).toEqual({ type: "ed25519" });
    }
  });

  it("maps every allowed size", () => {
    expect(resolveKeySpec("RSA", 2048)).toEqual({ type: "rsa", bits: 2048 });
    expect(resolveKeySpec("RSA", 4096)).toEqual({ type: "rsa", bits: 4096 });
    expect(resolveKeySpec("ECDSA", 384)).toEqual({ type: "ecdsa", curve: "P-384" });
    expect(resolveKeySpec("ECDSA", 521)).toEqual({ type: "ecdsa", curve: "P-521" });
    expect(resolveKeySpec("ED25519", 256)).toEqual({ type: "ed25519" });
  });

  it("round-trips every spec through keyTypeOf and keyBitsOf", () => {
    for (const spec of allCaKeySpecs) {
      expect(resolveKeySpec(keyTypeOf(spec), keyBitsOf(spec))).toEqual(spec);
    }
  });

  it("rejects every other size with a KeySpecError naming the allowed values", async () => {
    const allowed = { RSA: [0, 2048, 3072, 4096], ECDSA: [0, 256, 384, 521], ED25519: [0, 256] } as const;
    const hints = { RSA: "2048, 3072 or 4096", ECDSA: "256, 384 or 521", ED25519: "0 or 256" } as const;
    // fc.assert returns void for a sync property; biome cannot tell which overload applies.
    await fc.assert(
      fc.property(
        fc.constantFrom("RSA", "ECDSA", "ED25519" as const),
        fc.oneof(
          fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
          fc.constantFrom(1, 255, 257, 1024, 8192, 521.5),
        ),
        (type, bits) => {
          fc.pre(!(allowed[type] as readonly number[]).includes(bits));
          try {
            resolveKeySpec(type, bits);
            expect.unreachable();
          } catch (error) {
            expect(error).toBeInstanceOf(KeySpecError);
            expect((error as KeySpecError).reason).toContain(hints[type]);
          }
        },
      ),
    );
  });

  it("rejects an unknown key type", () => {
    expect(() => resolveKeySpec("DSA" as never, undefined)).toThrow(KeySpecError);
  });
});

describe("keyBitsOf", () => {
  it("reports 256 for Ed25519 and the size otherwise", () => {
    expect(allCaKeySpecs.map(keyBitsOf)).toEqual([256, 256, 384, 521, 2048, 3072, 4096]);
  });
});
