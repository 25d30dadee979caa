import { webcrypto } from "node:crypto";
import * as fc from "fast-check";
import { type CryptoKey as PasetoCryptoKey, PublicProtocol } from "paseto";
import { SecretKeyFromCryptoKey, SignFactory } from "paseto/v4/public";
import { beforeAll, describe, expect, it } from "vitest";
import { type GeneratedKey, generateKeyPair } from "../crypto/generate-key.js";
import {
  type AccessTokenVerifier,
  createAccessTokenSigner,
  createAccessTokenVerifier,
  createSignedTokenSigner,
  createSignedTokenVerifier,
  InvalidAccessTokenError,
  namesKey,
} from "./paseto.js";

const now = new Date("2030-05-06T07:08:09.000Z");
const claims = { sub: "user-1", sid: "session-1", typ: "access" } as const;
const at = (ms: number) => new Date(now.getTime() + ms);

let keyA: GeneratedKey;
let keyB: GeneratedKey;
let verifier: AccessTokenVerifier;
let token: string;

beforeAll(async () => {
  [keyA, keyB] = await Promise.all([
    generateKeyPair({ type: "ed25519" }),
    generateKeyPair({ type: "ed25519" }),
  ]);
  verifier = createAccessTokenVerifier({
    keys: [
      { keyId: "a", publicKeySpkiDer: keyA.publicKeySpkiDer },
      { keyId: "b", publicKeySpkiDer: keyB.publicKeySpkiDer },
    ],
  });
  token = await createAccessTokenSigner({ privateKeyPkcs8Der: keyA.privateKeyPkcs8Der, keyId: "a" }).sign(
    claims,
    {
      now,
      ttlSeconds: 900,
    },
  );
});

async function reasonOf(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(InvalidAccessTokenError);
  return (error as InvalidAccessTokenError).reason;
}

/** Signs arbitrary claims with key A, as a forger holding the key (or a buggy issuer) could. */
async function signRaw(payload: Record<string, string>, footer = '{"kid":"a"}'): Promise<string> {
  const cryptoKey = await webcrypto.subtle.importKey("pkcs8", keyA.privateKeyPkcs8Der, "Ed25519", true, [
    "sign",
  ]);
  const secretKey = await SecretKeyFromCryptoKey(cryptoKey as PasetoCryptoKey);
  return new PublicProtocol(SignFactory).Sign(secretKey, payload, {
    now,
    expiresIn: 900,
    footer: new TextEncoder().encode(footer),
  });
}

describe("access tokens", () => {
  it("round-trips the claims with iat and exp from the injected clock", async () => {
    expect(token.startsWith("v4.public.")).toBe(true);
    expect(await verifier.verify(token, at(1000))).toEqual({ ...claims, iat: now, exp: at(900_000) });
  });

  it("puts the key id in the footer and iss/aud in the claims", () => {
    const [, , payload, footer] = token.split(".");
    expect(Buffer.from(footer!, "base64url").toString()).toBe('{"kid":"a"}');
    const json = JSON.parse(Buffer.from(payload!, "base64url").subarray(0, -64).toString());
    expect(json).toEqual({
      ...claims,
      iss: "wap",
      aud: "wap",
      iat: "2030-05-06T07:08:09Z",
      exp: "2030-05-06T07:23:09Z",
    });
  });

  it("expires exactly at exp, relative to the injected now", async () => {
    await expect(verifier.verify(token, at(900_000 - 1))).resolves.toMatchObject(claims);
    expect(await reasonOf(verifier.verify(token, at(900_000)))).toBe("expired");
    expect(await reasonOf(verifier.verify(token, at(900_000 + 10_000)))).toBe("expired");
    expect(await reasonOf(verifier.verify(token, at(365 * 86_400_000)))).toBe("expired");
  });

  it("refuses a token issued in the future beyond the clock skew", async () => {
    await expect(verifier.verify(token, at(-5000))).resolves.toMatchObject(claims);
    expect(await reasonOf(verifier.verify(token, at(-6000)))).toBe("claims");
    const strict = createAccessTokenVerifier({
      keys: [{ keyId: "a", publicKeySpkiDer: keyA.publicKeySpkiDer }],
      clockSkewSeconds: 0,
    });
    expect(await reasonOf(strict.verify(token, at(-1)))).toBe("claims");
  });

  it("refuses a token signed with another key under the same key id", async () => {
    const forged = await createAccessTokenSigner({
      privateKeyPkcs8Der: keyB.privateKeyPkcs8Der,
      keyId: "a",
    }).sign(claims, { now, ttlSeconds: 900 });
    expect(await reasonOf(verifier.verify(forged, now))).toBe("signature");
  });

  it("verifies with whichever configured key the footer names", async () => {
    const fromB = await createAccessTokenSigner({
      privateKeyPkcs8Der: keyB.privateKeyPkcs8Der,
      keyId: "b",
    }).sign(claims, { now, ttlSeconds: 60 });
    await expect(verifier.verify(fromB, now)).resolves.toMatchObject(claims);
  });

  it("refuses an unknown key id", async () => {
    const other = await createAccessTokenSigner({
      privateKeyPkcs8Der: keyA.privateKeyPkcs8Der,
      keyId: "c",
    }).sign(claims, { now, ttlSeconds: 60 });
    expect(await reasonOf(verifier.verify(other, now))).toBe("unknown_key");
  });

  it("refuses a tampered payload", async () => {
    const [v, purpose, payload, footer] = token.split(".");
    const bytes = Buffer.from(payload!, "base64url");
    const json = bytes.subarray(0, -64).toString().replace("user-1", "user-2");
    const tampered = Buffer.concat([Buffer.from(json), bytes.subarray(-64)]).toString("base64url");
    expect(await reasonOf(verifier.verify(`${v}.${purpose}.${tampered}.${footer}`, now))).toBe("signature");

    // Every single-bit flip of payload or signature.
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: bytes.length * 8 - 1 }), async (bit) => {
        const copy = Buffer.from(bytes);
        copy[bit >> 3]! ^= 1 << (bit & 7);
        const reason = await reasonOf(
          verifier.verify(`${v}.${purpose}.${copy.toString("base64url")}.${footer}`, now),
        );
        expect(reason).toBe("signature");
      }),
      { numRuns: 100 },
    );
  });

  it("refuses a footer moved to another configured key", async () => {
    const [v, purpose, payload] = token.split(".");
    const footer = Buffer.from('{"kid":"b"}').toString("base64url");
    expect(await reasonOf(verifier.verify(`${v}.${purpose}.${payload}.${footer}`, now))).toBe("signature");
  });

  it("refuses tokens without or with a foreign footer as malformed", async () => {
    const [v, purpose, payload] = token.split(".");
    expect(await reasonOf(verifier.verify(`${v}.${purpose}.${payload}`, now))).toBe("malformed");
    const spaced = Buffer.from('{ "kid": "a" }').toString("base64url");
    expect(await reasonOf(verifier.verify(`${v}.${purpose}.${payload}.${spaced}`, now))).toBe("malformed");
    expect(await reasonOf(verifier.verify(token.replace("v4.public.", "v4.local."), now))).toBe("malformed");
    expect(await reasonOf(verifier.verify(token.replace("v4.public.", "v2.public."), now))).toBe("malformed");
    expect(await reasonOf(verifier.verify("", now))).toBe("malformed");
    expect(await reasonOf(verifier.verify(undefined as unknown as string, now))).toBe("malformed");
    expect(await reasonOf(verifier.verify(`${token}${"A".repeat(5000)}`, now))).toBe("malformed");
  });

  it("refuses correctly signed tokens with the wrong typ, iss, aud or missing claims", async () => {
    const base = { sub: "user-1", sid: "session-1", typ: "access", iss: "wap", aud: "wap" };
    await expect(verifier.verify(await signRaw(base), now)).resolves.toMatchObject(claims);
    for (const payload of [
      { ...base, typ: "refresh" },
      { ...base, iss: "someone-else" },
      { ...base, aud: "someone-else" },
      { ...base, sub: "" },
      (({ sid: _, ...rest }) => rest)(base),
      (({ iss: _, ...rest }) => rest)(base),
    ]) {
      expect(await reasonOf(verifier.verify(await signRaw(payload), now))).toBe("claims");
    }
  });

  it("validates signer and verifier configuration", async () => {
    expect(() => createAccessTokenSigner({ privateKeyPkcs8Der: keyA.privateKeyPkcs8Der, keyId: "" })).toThrow(
      TypeError,
    );
    const signer = createAccessTokenSigner({ privateKeyPkcs8Der: keyA.privateKeyPkcs8Der, keyId: "a" });
    await expect(signer.sign(claims, { now, ttlSeconds: 0 })).rejects.toThrow(RangeError);
    await expect(signer.sign(claims, { now, ttlSeconds: 1.5 })).rejects.toThrow(RangeError);
    expect(() =>
      createAccessTokenVerifier({
        keys: [
          { keyId: "a", publicKeySpkiDer: keyA.publicKeySpkiDer },
          { keyId: "a", publicKeySpkiDer: keyB.publicKeySpkiDer },
        ],
      }),
    ).toThrow(TypeError);
    const ecKey = await generateKeyPair({ type: "ecdsa", curve: "P-256" });
    expect(() =>
      createAccessTokenSigner({ privateKeyPkcs8Der: ecKey.privateKeyPkcs8Der, keyId: "a" }),
    ).toThrow(/must be Ed25519/);
    expect(() =>
      createAccessTokenVerifier({ keys: [{ keyId: "a", publicKeySpkiDer: ecKey.publicKeySpkiDer }] }),
    ).toThrow(/must be Ed25519/);
    expect(() =>
      createAccessTokenVerifier({ keys: [{ keyId: "a", publicKeySpkiDer: new Uint8Array([1, 2, 3]) }] }),
    ).toThrow(TypeError);
  });

  it("never verifies random strings and only ever throws InvalidAccessTokenError", async () => {
    const b64url = fc.string({
      unit: fc.constantFrom(..."ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
    });
    const candidates = fc.oneof(
      fc.string(),
      fc.string({ unit: "binary" }),
      fc.tuple(b64url, b64url).map(([p, f]) => `v4.public.${p}.${f}`),
      fc
        .tuple(b64url, fc.constantFrom("eyJraWQiOiJhIn0", "eyJraWQiOiJiIn0", ""))
        .map(([p, f]) => `v4.public.${p}.${f}`),
      // Mutations of a real token: one character replaced, or a cut.
      fc
        .tuple(fc.nat(), fc.constantFrom(..."Aa0-_.=+/ "))
        .map(([i, c]) => {
          const at = i % token.length;
          return token.slice(0, at) + c + token.slice(at + 1);
        })
        .filter((t) => t !== token),
      fc.nat().map((i) => token.slice(0, i % token.length)),
    );
    await fc.assert(
      fc.asyncProperty(candidates, async (candidate) => {
        const outcome = await verifier.verify(candidate, now).then(
          () => "verified",
          (e: unknown) => e,
        );
        expect(outcome).toBeInstanceOf(InvalidAccessTokenError);
      }),
      { numRuns: 1000 },
    );
  });
});

describe("namesKey", () => {
  it("tells a token signed under a key id from tokens of other keys and from other strings", async () => {
    const underB = await createAccessTokenSigner({
      privateKeyPkcs8Der: keyB.privateKeyPkcs8Der,
      keyId: "b",
    }).sign(claims, { now, ttlSeconds: 900 });
    expect(namesKey("a")(token)).toBe(true);
    expect(namesKey("b")(token)).toBe(false);
    expect(namesKey("b")(underB)).toBe(true);
    const [payload, footer] = token.slice("v4.public.".length).split(".") as [string, string];
    for (const other of [
      `v4.local.${payload}.${footer}`,
      `v4.public.${footer}`,
      `v4.public.${payload}.x.${footer}`,
      `v4.public.${payload}.${footer}=`,
      `${token} `,
    ]) {
      expect(namesKey("a")(other), other).toBe(false);
    }
  });

  it("names a key only where the verifier would read that key id", async () => {
    const recognises = namesKey("a");
    await fc.assert(
      fc.asyncProperty(fc.string({ maxLength: 80 }), fc.nat(token.length), async (noise, at) => {
        const candidate = token.slice(0, at) + noise + token.slice(at);
        if (!recognises(candidate)) return;
        // Recognised: the verifier reads key id "a" (it may still refuse the signature).
        await verifier.verify(candidate, now).catch((error: InvalidAccessTokenError) => {
          expect(error.reason).not.toBe("unknown_key");
          expect(error.reason === "malformed" ? error.message : "").not.toMatch(/footer/);
        });
      }),
      { numRuns: 200 },
    );
  });
});

describe("token profiles", () => {
  const bound = {
    requiredClaims: ["sub"],
    implicitAssertion: new TextEncoder().encode("kind one"),
    allowNonExpiring: true,
  } as const;

  it("binds a token to its profile's implicit assertion and lets only such a profile omit exp", async () => {
    const signerOptions = { privateKeyPkcs8Der: keyA.privateKeyPkcs8Der, keyId: "a" };
    const verifierOptions = { keys: [{ keyId: "a", publicKeySpkiDer: keyA.publicKeySpkiDer }] };
    const lasting = await createSignedTokenSigner(signerOptions, bound).sign(
      { sub: "x" },
      { now, expiresAt: null },
    );
    const verified = await createSignedTokenVerifier(verifierOptions, bound).verify(lasting, at(1e12));
    expect(verified).toMatchObject({ claims: { sub: "x" }, exp: null });

    // The same key, another kind: the assertion differs, so the signature does not verify.
    const other = { ...bound, implicitAssertion: new TextEncoder().encode("kind two") };
    expect(await reasonOf(createSignedTokenVerifier(verifierOptions, other).verify(lasting, now))).toBe(
      "signature",
    );
    const { implicitAssertion: _, ...unbound } = bound;
    expect(await reasonOf(createSignedTokenVerifier(verifierOptions, unbound).verify(lasting, now))).toBe(
      "signature",
    );
    // A profile that does not allow it refuses a token without exp, and will not sign one.
    const expiring = { ...bound, allowNonExpiring: false };
    // (The library reports the missing exp as the exp claim failing: "expired".)
    expect(await reasonOf(createSignedTokenVerifier(verifierOptions, expiring).verify(lasting, now))).toBe(
      "expired",
    );
    await expect(
      createSignedTokenSigner(signerOptions, expiring).sign({ sub: "x" }, { now, expiresAt: null }),
    ).rejects.toThrow(TypeError);
  });
});
