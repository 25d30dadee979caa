import * as fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  decodeBase64Lenient,
  decodeBase64Url,
  encodeBase64,
  encodeBase64NoPad,
  encodeBase64Url,
} from "./base64.js";

describe("base64", () => {
  it("matches node's encoders", async () => {
    // fc.assert returns void for a sync property; biome cannot tell which overload applies.
    await fc.assert(
      fc.property(fc.uint8Array({ maxLength: 100 }), (bytes) => {
        const buffer = Buffer.from(bytes);
        expect(encodeBase64(bytes)).toBe(buffer.toString("base64"));
        expect(encodeBase64NoPad(bytes)).toBe(buffer.toString("base64").replace(/=+$/, ""));
        expect(encodeBase64Url(bytes)).toBe(buffer.toString("base64url"));
      }),
    );
  });

  it("decodes every encoding back to the same bytes", async () => {
    // fc.assert returns void for a sync property; biome cannot tell which overload applies.
    await fc.assert(
      fc.property(fc.uint8Array({ maxLength: 100 }), (bytes) => {
        expect(decodeBase64Lenient(encodeBase64(bytes))).toEqual(bytes);
        expect(decodeBase64Lenient(encodeBase64NoPad(bytes))).toEqual(bytes);
        expect(decodeBase64Lenient(encodeBase64Url(bytes))).toEqual(bytes);
        expect(decodeBase64Url(encodeBase64Url(bytes))).toEqual(bytes);
      }),
    );
  });

  it("rejects what is not a canonical encoding", () => {
    for (const bad of [
      "A",
      "AB=C",
      "AB===",
      "A=B=",
      "AB C",
      "AB\n",
      "+-AA",
      "AB*",
      "AQ==x",
      "AR",
      "AR==",
      "é",
    ]) {
      expect(decodeBase64Lenient(bad), bad).toBeUndefined();
    }
    expect(decodeBase64Url("AQ==")).toBeUndefined();
    expect(decodeBase64Url("+/8")).toBeUndefined();
    expect(decodeBase64Lenient("")).toEqual(new Uint8Array(0));
  });
});
