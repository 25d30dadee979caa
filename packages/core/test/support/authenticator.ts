/**
 * A software WebAuthn authenticator (and the browser around it) for tests: ES256 keys from
 * node:crypto, attestation "none", CBOR written by hand. It answers the options JSON our
 * Begin* RPCs return with the JSON our Finish* RPCs take.
 */
import { createHash, generateKeyPairSync, type KeyObject, randomBytes, sign } from "node:crypto";

// --- CBOR (RFC 8949), just the types WebAuthn needs ---------------------------------------------

type Cbor = number | string | Uint8Array | Cbor[] | Map<Cbor, Cbor>;

function head(major: number, length: number): Uint8Array {
  if (length < 24) return Uint8Array.of((major << 5) | length);
  if (length < 0x100) return Uint8Array.of((major << 5) | 24, length);
  if (length < 0x10000) return Uint8Array.of((major << 5) | 25, length >> 8, length & 0xff);
  const out = new Uint8Array(5);
  out[0] = (major << 5) | 26;
  new DataView(out.buffer).setUint32(1, length);
  return out;
}

export function encodeCbor(value: Cbor): Uint8Array {
  if (typeof value === "number") return value >= 0 ? head(0, value) : head(1, -1 - value);
  if (typeof value === "string") {
    const bytes = new TextEncoder().encode(value);
    return Buffer.concat([head(3, bytes.length), bytes]);
  }
  if (value instanceof Uint8Array) return Buffer.concat([head(2, value.length), value]);
  if (Array.isArray(value)) return Buffer.concat([head(4, value.length), ...value.map(encodeCbor)]);
  const parts: Uint8Array[] = [head(5, value.size)];
  for (const [k, v] of value) parts.push(encodeCbor(k), encodeCbor(v));
  return Buffer.concat(parts);
}

// --- the authenticator ----------------------------------------------------------------------

const b64url = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64url");
const sha256 = (data: Uint8Array | string) => createHash("sha256").update(data).digest();

interface Credential {
  readonly id: Uint8Array;
  readonly privateKey: KeyObject;
  readonly publicKey: KeyObject;
  readonly rpId: string;
  readonly userHandle: Uint8Array;
  signCount: number;
}

export interface AuthenticatorOptions {
  /** The origin the "browser" reports. */
  readonly origin: string;
  /** Set the UV flag (PIN or biometrics done). Default true. */
  readonly userVerified?: boolean;
}

export function createSoftwareAuthenticator(options: AuthenticatorOptions) {
  const credentials: Credential[] = [];
  const flags = (extra: number) => 0x01 | (options.userVerified === false ? 0 : 0x04) | extra;
  const counter = (n: number) => {
    const out = new Uint8Array(4);
    new DataView(out.buffer).setUint32(0, n);
    return out;
  };

  return {
    credentials,
    /** navigator.credentials.create(): the RegistrationResponseJSON for `optionsJson`. */
    create(optionsJson: string, overrides: { origin?: string; challenge?: string } = {}): string {
      const opts = JSON.parse(optionsJson) as {
        challenge: string;
        rp: { id: string };
        user: { id: string };
        pubKeyCredParams: Array<{ alg: number }>;
      };
      if (!opts.pubKeyCredParams.some((p) => p.alg === -7)) throw new Error("ES256 not offered");
      const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
      const jwk = publicKey.export({ format: "jwk" });
      const coseKey = new Map<Cbor, Cbor>([
        [1, 2], // kty: EC2
        [3, -7], // alg: ES256
        [-1, 1], // crv: P-256
        [-2, Buffer.from(jwk.x!, "base64url")],
        [-3, Buffer.from(jwk.y!, "base64url")],
      ]);
      const credential: Credential = {
        id: randomBytes(32),
        privateKey,
        publicKey,
        rpId: opts.rp.id,
        userHandle: Buffer.from(opts.user.id, "base64url"),
        signCount: 0,
      };
      const authData = Buffer.concat([
        sha256(opts.rp.id),
        Uint8Array.of(flags(0x40)), // AT: attested credential data follows
        counter(0),
        new Uint8Array(16), // AAGUID: none
        Uint8Array.of(credential.id.length >> 8, credential.id.length & 0xff),
        credential.id,
        encodeCbor(coseKey),
      ]);
      const clientData = JSON.stringify({
        type: "webauthn.create",
        challenge: overrides.challenge ?? opts.challenge,
        origin: overrides.origin ?? options.origin,
        crossOrigin: false,
      });
      const attestationObject = encodeCbor(
        new Map<Cbor, Cbor>([
          ["fmt", "none"],
          ["attStmt", new Map()],
          ["authData", authData],
        ]),
      );
      credentials.push(credential);
      return JSON.stringify({
        id: b64url(credential.id),
        rawId: b64url(credential.id),
        type: "public-key",
        response: {
          clientDataJSON: b64url(Buffer.from(clientData)),
          attestationObject: b64url(attestationObject),
          transports: ["internal"],
        },
        clientExtensionResults: {},
        authenticatorAttachment: "platform",
      });
    },

    /** navigator.credentials.get(): the AuthenticationResponseJSON for `optionsJson`. */
    get(
      optionsJson: string,
      overrides: { origin?: string; credential?: Credential; userHandle?: Uint8Array } = {},
    ): string {
      const opts = JSON.parse(optionsJson) as { challenge: string; rpId: string };
      const credential = overrides.credential ?? credentials.find((c) => c.rpId === opts.rpId);
      if (!credential) throw new Error(`no credential for ${opts.rpId}`);
      credential.signCount += 1;
      const authData = Buffer.concat([
        sha256(opts.rpId),
        Uint8Array.of(flags(0)),
        counter(credential.signCount),
      ]);
      const clientData = Buffer.from(
        JSON.stringify({
          type: "webauthn.get",
          challenge: opts.challenge,
          origin: overrides.origin ?? options.origin,
          crossOrigin: false,
        }),
      );
      const signature = sign("sha256", Buffer.concat([authData, sha256(clientData)]), credential.privateKey);
      return JSON.stringify({
        id: b64url(credential.id),
        rawId: b64url(credential.id),
        type: "public-key",
        response: {
          clientDataJSON: b64url(clientData),
          authenticatorData: b64url(authData),
          signature: b64url(signature),
          userHandle: b64url(overrides.userHandle ?? credential.userHandle),
        },
        clientExtensionResults: {},
        authenticatorAttachment: "platform",
      });
    },
  };
}
