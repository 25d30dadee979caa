import * as fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  createMasterKeyStore,
  formatMasterKey,
  generateMasterKey,
  InvalidMasterKeyError,
  masterKeyId,
  parseMasterKey,
  SealedDataError,
} from "./key-store.js";

const plaintext = new TextEncoder().encode("-----BEGIN PRIVATE KEY----- not really");

async function expectSealedError(
  promise: Promise<unknown>,
  reason: SealedDataError["reason"],
): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(SealedDataError);
  expect((error as SealedDataError).reason).toBe(reason);
}

describe("createMasterKeyStore", () => {
  const masterKey = generateMasterKey();
  const store = createMasterKeyStore({ masterKey });

  it("opens what it sealed under the same context", async () => {
    const sealed = await store.seal(plaintext, "ca-key:1");
    expect(await store.open(sealed, "ca-key:1")).toEqual(plaintext);
  });

  it("writes version 1, the key id, a fresh nonce, and a 16-byte tag", async () => {
    const a = await store.seal(plaintext, "ctx");
    const b = await store.seal(plaintext, "ctx");
    const id = masterKeyId(masterKey);
    expect(a[0]).toBe(1);
    expect(a[1]).toBe(id.length);
    expect(new TextDecoder().decode(a.subarray(2, 2 + id.length))).toBe(id);
    expect(a.length).toBe(2 + id.length + 12 + plaintext.length + 16);
    expect(a).not.toEqual(b);
  });

  it("seals the empty plaintext", async () => {
    const sealed = await store.seal(new Uint8Array(0), "ctx");
    expect(await store.open(sealed, "ctx")).toEqual(new Uint8Array(0));
  });

  it("refuses another context", async () => {
    const sealed = await store.seal(plaintext, "ca-key:1");
    await expectSealedError(store.open(sealed, "ca-key:2"), "authentication");
    await expectSealedError(store.open(sealed, ""), "authentication");
  });

  it("refuses any single flipped bit", async () => {
    const sealed = await store.seal(plaintext, "ctx");
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: sealed.length * 8 - 1 }), async (bit) => {
        const tampered = new Uint8Array(sealed);
        tampered[bit >> 3]! ^= 1 << (bit & 7);
        await expect(store.open(tampered, "ctx")).rejects.toBeInstanceOf(SealedDataError);
      }),
      { numRuns: 200 },
    );
  });

  it("refuses truncated or arbitrary input with SealedDataError only", async () => {
    const sealed = await store.seal(plaintext, "ctx");
    for (let n = 0; n < sealed.length; n++) {
      await expect(store.open(sealed.subarray(0, n), "ctx")).rejects.toBeInstanceOf(SealedDataError);
    }
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 200 }), fc.string(), async (bytes, context) => {
        await expect(store.open(bytes, context)).rejects.toBeInstanceOf(SealedDataError);
      }),
      { numRuns: 200 },
    );
  });

  it("refuses data sealed with another master key", async () => {
    const other = createMasterKeyStore({ masterKey: generateMasterKey() });
    await expectSealedError(store.open(await other.seal(plaintext, "ctx"), "ctx"), "unknown_key");

    // Same explicit key id, different key: only authentication can tell.
    const a = createMasterKeyStore({ masterKey: generateMasterKey(), keyId: "primary" });
    const b = createMasterKeyStore({ masterKey: generateMasterKey(), keyId: "primary" });
    await expectSealedError(b.open(await a.seal(plaintext, "ctx"), "ctx"), "authentication");
  });

  it("refuses an unknown format version", async () => {
    const sealed = await store.seal(plaintext, "ctx");
    sealed[0] = 2;
    await expectSealedError(store.open(sealed, "ctx"), "unsupported_version");
  });

  it("opens data sealed under a previous key during rotation, and seals with the new one", async () => {
    const oldKey = generateMasterKey();
    const newKey = generateMasterKey();
    const before = createMasterKeyStore({ masterKey: oldKey, keyId: "2024" });
    const sealedOld = await before.seal(plaintext, "ctx");

    const after = createMasterKeyStore({
      masterKey: newKey,
      keyId: "2025",
      previousKeys: [{ masterKey: oldKey, keyId: "2024" }],
    });
    expect(await after.open(sealedOld, "ctx")).toEqual(plaintext);
    const sealedNew = await after.seal(plaintext, "ctx");
    await expectSealedError(before.open(sealedNew, "ctx"), "unknown_key");
  });

  it("rejects master keys that are not 32 bytes and bad key ids", () => {
    expect(() => createMasterKeyStore({ masterKey: new Uint8Array(16) })).toThrow(InvalidMasterKeyError);
    expect(() => createMasterKeyStore({ masterKey, keyId: "" })).toThrow(InvalidMasterKeyError);
    expect(() => createMasterKeyStore({ masterKey, keyId: "with space" })).toThrow(InvalidMasterKeyError);
    expect(() =>
      createMasterKeyStore({
        masterKey,
        keyId: "a",
        previousKeys: [{ masterKey: generateMasterKey(), keyId: "a" }],
      }),
    ).toThrow(InvalidMasterKeyError);
  });
});

describe("parseMasterKey", () => {
  const key = Uint8Array.from({ length: 32 }, (_, i) => 250 - i * 3);

  it("accepts base64 and base64url, padded or not, with surrounding whitespace", () => {
    const std = Buffer.from(key).toString("base64");
    const url = Buffer.from(key).toString("base64url");
    expect(std).toMatch(/[+/]/);
    expect(url).toMatch(/[-_]/);
    for (const text of [std, std.replace(/=+$/, ""), url, `${url}=`, `  ${std}\n`]) {
      expect(parseMasterKey(text)).toEqual(key);
    }
    expect(parseMasterKey(formatMasterKey(key))).toEqual(key);
  });

  it("rejects the wrong length, stray characters and mixed alphabets with a clear message", () => {
    const std = Buffer.from(key).toString("base64");
    expect(() => parseMasterKey("")).toThrow(/empty/);
    expect(() => parseMasterKey(Buffer.alloc(31).toString("base64"))).toThrow(/exactly 32 bytes \(got 31\)/);
    expect(() => parseMasterKey(Buffer.alloc(33).toString("base64"))).toThrow(/exactly 32 bytes \(got 33\)/);
    expect(() => parseMasterKey(`${std.slice(0, 10)}!${std.slice(11)}`)).toThrow(/not valid base64/);
    expect(() => parseMasterKey(`${std.slice(0, 10)} ${std.slice(10)}`)).toThrow(/not valid base64/);
    expect(() => parseMasterKey(std.replace("+", "-"))).toThrow(/not valid base64/);
    expect(() => parseMasterKey(Buffer.from(key).toString("hex"))).toThrow(InvalidMasterKeyError);
  });

  it("round-trips every key through formatMasterKey", async () => {
    // fc.assert returns void for a sync property; biome cannot tell which overload applies.
    await fc.assert(
      fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), (bytes) => {
        expect(parseMasterKey(formatMasterKey(bytes))).toEqual(bytes);
      }),
    );
  });

  it("generateMasterKey makes distinct 32-byte keys", () => {
    const a = generateMasterKey();
    expect(a.length).toBe(32);
    expect(a).not.toEqual(generateMasterKey());
  });
});
