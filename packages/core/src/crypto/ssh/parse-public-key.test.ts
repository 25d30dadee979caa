import { execFile } from "node:child_process";
import { createPublicKey, generateKeyPairSync } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { sshFingerprintSha256, sshKeyAlgorithmOf, sshPublicKeyBlob, sshPublicKeyLine } from "@wap/ssh-wire";
import * as fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decodeBase64Url, encodeBase64 } from "../../lib/base64.js";
import { concatBytes } from "../../lib/bytes.js";
import { SshReader, SshWriter } from "../../lib/ssh-wire.js";
import { type GeneratedKey, generateKeyPair } from "../generate-key.js";
import { allCaKeySpecs, describeKeySpec, keyBitsOf } from "../key-types.js";
import { type ParsedSshPublicKey, parseSshPublicKey, SshKeyParseError } from "./parse-public-key.js";

const run = promisify(execFile);

let dir: string;
const keys = new Map<string, GeneratedKey>();

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "wap-ssh-parse-"));
  const generated = await Promise.all(allCaKeySpecs.map((spec) => generateKeyPair(spec)));
  for (const key of generated) keys.set(describeKeySpec(key.spec), key);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const keyTypeOfSpec = { ed25519: "ed25519", ecdsa: "ecdsa", rsa: "rsa" } as const;

/** The error a parse throws; fails the test when it does not throw an SshKeyParseError. */
function parseError(line: string): SshKeyParseError {
  try {
    parseSshPublicKey(line);
  } catch (err) {
    expect(err).toBeInstanceOf(SshKeyParseError);
    return err as SshKeyParseError;
  }
  throw new Error(`expected ${JSON.stringify(line.slice(0, 60))} to be refused`);
}

const lineOf = (algorithm: string, blob: Uint8Array, comment = "") =>
  `${algorithm} ${encodeBase64(blob)}${comment === "" ? "" : ` ${comment}`}`;

describe.each(allCaKeySpecs.map((spec) => [describeKeySpec(spec), spec] as const))("%s", (name, spec) => {
  it("parses our own line with and without comment, and with a trailing newline", () => {
    const key = keys.get(name)!;
    const blob = sshPublicKeyBlob(key.publicKeySpkiDer);
    const withComment = parseSshPublicKey(`${sshPublicKeyLine(key.publicKeySpkiDer, "alice@laptop")}\n`);
    expect(withComment).toEqual({
      algorithm: sshKeyAlgorithmOf(key.publicKeySpkiDer),
      keyType: keyTypeOfSpec[spec.type],
      bits: keyBitsOf(spec),
      blob,
      fingerprint: sshFingerprintSha256(blob),
      comment: "alice@laptop",
    } satisfies ParsedSshPublicKey);
    const bare = parseSshPublicKey(sshPublicKeyLine(key.publicKeySpkiDer));
    expect(bare.comment).toBe("");
    expect(bare.blob).toEqual(blob);
  });
});

describe("keys written by ssh-keygen", () => {
  it.each([
    ["ed25519", [], "ssh-ed25519", 256],
    ["ecdsa", ["-b", "256"], "ecdsa-sha2-nistp256", 256],
    ["ecdsa", ["-b", "384"], "ecdsa-sha2-nistp384", 384],
    ["ecdsa", ["-b", "521"], "ecdsa-sha2-nistp521", 521],
    ["rsa", ["-b", "2048"], "ssh-rsa", 2048],
    ["rsa", ["-b", "3072"], "ssh-rsa", 3072],
  ] as const)(
    "parses a %s %j key with the fingerprint ssh-keygen -l prints",
    async (type, args, algorithm, bits) => {
      const file = join(dir, `keygen-${type}-${args.join("")}`);
      await run("ssh-keygen", ["-q", "-t", type, ...args, "-N", "", "-C", "bob@host two words", "-f", file]);
      const line = await readFile(`${file}.pub`, "utf8");
      const parsed = parseSshPublicKey(line);
      expect(parsed).toMatchObject({ algorithm, bits, comment: "bob@host two words" });
      const { stdout } = await run("ssh-keygen", ["-l", "-E", "sha256", "-f", `${file}.pub`]);
      expect(stdout.split(" ")[1]).toBe(parsed.fingerprint);
    },
  );
});

describe("line syntax", () => {
  const ed = () => sshPublicKeyLine(keys.get("ed25519")!.publicKeySpkiDer);

  it("accepts tabs and runs of spaces between fields and keeps inner comment spacing", () => {
    const [type, data] = ed().split(" ");
    expect(parseSshPublicKey(`  ${type}\t\t${data}   my  laptop \r\n`).comment).toBe("my  laptop");
  });

  it.each([
    ["", /empty/],
    ["   \n", /empty/],
    ["ssh-ed25519", /missing base64/],
    ["ssh-ed25519 !!!!", /not valid base64/],
    ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA", /not valid base64/],
    ["ssh-foo AAAA", /unrecognised key type "ssh-foo"/],
    ["ssh-ed448 AAAA", /unrecognised key type/],
    ["ssh-dss AAAAB3NzaC1kc3M= x", /DSA/],
    ["sk-ssh-ed448@openssh.com AAAA x", /security-key \(FIDO\)/],
    ["sk-ecdsa-sha2-nistp384@openssh.com AAAA x", /security-key \(FIDO\)/],
    ["ssh-ed25519-cert-v01@openssh.com AAAA x", /certificates are not accepted/],
    ["ssh-rsa-cert-v01@openssh.com AAAA x", /certificates are not accepted/],
    ["ecdsa-sha2-nistp224 AAAA", /unsupported ECDSA curve/],
    ["@cert-authority * ssh-ed25519 AAAA", /known_hosts markers/],
  ])("refuses %j", (line, reason) => {
    expect(parseError(line).reason).toMatch(reason);
  });

  it.each([
    'command="echo hi" ',
    "restrict ",
    "no-pty,no-port-forwarding ",
    'from="10.0.0.0/8",no-agent-forwarding ',
  ])("refuses authorized_keys options %j", (options) => {
    expect(parseError(`${options}${ed()} alice`).reason).toMatch(
      /options before the key type are not accepted/,
    );
  });

  it("refuses base64url and unpadded data", () => {
    const [type, data] = ed().split(" ") as [string, string];
    const url = data.replace(/\+/g, "-").replace(/\//g, "_");
    if (url !== data) expect(parseError(`${type} ${url}`).reason).toMatch(/base64/);
    // A P-256 blob is 104 bytes, so its base64 ends in one "=".
    const [p256, padded] = sshPublicKeyLine(keys.get("ecdsa-P-256")!.publicKeySpkiDer).split(" ") as [
      string,
      string,
    ];
    expect(padded.endsWith("=")).toBe(true);
    expect(parseError(`${p256} ${padded.slice(0, -1)}`).reason).toMatch(/base64/);
  });

  it("refuses two keys, control characters in the comment and overlong lines", () => {
    expect(parseError(`${ed()}\n${ed()}`).reason).toMatch(/exactly one/);
    expect(parseError(`${ed()} bad\u0007bell`).reason).toMatch(/control characters/);
    expect(parseError(`${ed()} ${"c".repeat(2000)}`).reason).toMatch(/comment is longer/);
    expect(parseError(`${ed()} ${"c".repeat(20000)}`).reason).toMatch(/longer than/);
  });

  it("refuses input that is not a string", () => {
    expect(parseError(42 as unknown as string).reason).toMatch(/must be a string/);
  });
});

describe("key data", () => {
  const ed25519Key = () => new SshReader(sshPublicKeyBlob(keys.get("ed25519")!.publicKeySpkiDer));
  const rsaJwk = () =>
    generateKeyPairSync("rsa", { modulusLength: 2048 }).publicKey.export({ format: "jwk" });
  const bytes = (b64url: string | undefined) => decodeBase64Url(b64url!)!;
  const rsaBlob = (e: Uint8Array, n: Uint8Array, raw = false) => {
    const w = new SshWriter().string("ssh-rsa");
    // raw: write the mpint bytes as given, to build non-minimal or negative encodings.
    return (raw ? w.string(e).string(n) : w.mpint(e).mpint(n)).bytes();
  };

  it("refuses a blob whose inner type differs from the line", () => {
    const blob = sshPublicKeyBlob(keys.get("ed25519")!.publicKeySpkiDer);
    expect(parseError(lineOf("ssh-rsa", blob)).reason).toMatch(
      /of type "ssh-ed25519" but the line says ssh-rsa/,
    );
  });

  it("refuses truncated data and trailing bytes", () => {
    const blob = sshPublicKeyBlob(keys.get("ecdsa-P-256")!.publicKeySpkiDer);
    expect(parseError(lineOf("ecdsa-sha2-nistp256", blob.subarray(0, blob.length - 1))).reason).toMatch(
      /truncated/,
    );
    expect(parseError(lineOf("ecdsa-sha2-nistp256", concatBytes(blob, new Uint8Array([0])))).reason).toMatch(
      /1 unexpected bytes/,
    );
  });

  it("refuses Ed25519 keys of the wrong length", () => {
    const r = ed25519Key();
    r.string();
    const key = r.string();
    for (const bad of [key.subarray(0, 31), concatBytes(key, new Uint8Array([1]))]) {
      const blob = new SshWriter().string("ssh-ed25519").string(bad).bytes();
      expect(parseError(lineOf("ssh-ed25519", blob)).reason).toMatch(/must be 32 bytes/);
    }
  });

  describe("ECDSA", () => {
    const point = () => {
      const r = new SshReader(sshPublicKeyBlob(keys.get("ecdsa-P-256")!.publicKeySpkiDer));
      r.string();
      r.string();
      return r.string();
    };
    const ecBlob = (curve: string, p: Uint8Array, type = "ecdsa-sha2-nistp256") =>
      new SshWriter().string(type).string(curve).string(p).bytes();

    it("refuses a curve name that does not match the type", () => {
      expect(parseError(lineOf("ecdsa-sha2-nistp256", ecBlob("nistp384", point()))).reason).toMatch(
        /names curve "nistp384", not nistp256/,
      );
    });

    it("refuses a point that is not on the curve", () => {
      const p = new Uint8Array(point());
      p[64] = p[64]! ^ 1;
      expect(parseError(lineOf("ecdsa-sha2-nistp256", ecBlob("nistp256", p))).reason).toMatch(
        /not on the curve/,
      );
    });

    it("refuses the all-zero point, compressed points and wrong lengths", () => {
      const zero = new Uint8Array(65);
      zero[0] = 4;
      expect(parseError(lineOf("ecdsa-sha2-nistp256", ecBlob("nistp256", zero))).reason).toMatch(
        /not on the curve/,
      );
      const compressed = concatBytes(new Uint8Array([2]), point().subarray(1, 33));
      expect(parseError(lineOf("ecdsa-sha2-nistp256", ecBlob("nistp256", compressed))).reason).toMatch(
        /uncompressed nistp256 point of 65 bytes/,
      );
    });

    it("refuses coordinates that are not reduced modulo the field prime", () => {
      // x + p still fits in 66 bytes for P-521 only when x is small; build that case directly.
      const p521 = 2n ** 521n - 1n;
      const x = p521 + 1n;
      const hex = x.toString(16).padStart(132, "0");
      const coords = Uint8Array.from(hex.match(/../g)!.map((h) => Number.parseInt(h, 16)));
      const p = concatBytes(new Uint8Array([4]), coords, coords);
      const blob = ecBlob("nistp521", p, "ecdsa-sha2-nistp521");
      expect(parseError(lineOf("ecdsa-sha2-nistp521", blob)).reason).toMatch(/out of range/);
    });
  });

  describe("RSA", () => {
    it("refuses keys under 2048 bits", () => {
      const small = generateKeyPairSync("rsa", { modulusLength: 1024 }).publicKey;
      expect(parseError(sshPublicKeyLine(small)).reason).toMatch(/at least 2048 bits \(got 1024\)/);
    });

    it("refuses bad exponents", () => {
      const n = bytes(rsaJwk().n);
      for (const [e, reason] of [
        [new Uint8Array([2]), /odd and at least 3/],
        [new Uint8Array([1]), /odd and at least 3/],
        [new Uint8Array([1, 0, 0, 1]), /too large/],
      ] as const) {
        expect(parseError(lineOf("ssh-rsa", rsaBlob(e, n))).reason).toMatch(reason);
      }
      expect(parseError(lineOf("ssh-rsa", rsaBlob(new Uint8Array(0), n, true))).reason).toMatch(
        /exponent is zero/,
      );
    });

    it("refuses negative and non-minimal mpints and an even modulus", () => {
      const jwk = rsaJwk();
      const e = bytes(jwk.e);
      const n = bytes(jwk.n);
      expect(parseError(lineOf("ssh-rsa", rsaBlob(e, n, true))).reason).toMatch(/modulus is negative/);
      const padded = concatBytes(new Uint8Array([0, 0]), n);
      expect(parseError(lineOf("ssh-rsa", rsaBlob(e, padded, true))).reason).toMatch(/non-minimal/);
      const even = new Uint8Array(n);
      even[even.length - 1] = even[even.length - 1]! & 0xfe;
      expect(parseError(lineOf("ssh-rsa", rsaBlob(e, even))).reason).toMatch(/modulus is even/);
    });
  });
});

describe("property: the ECDSA point check agrees with node:crypto", () => {
  const curves = [
    ["ecdsa-P-256", "ecdsa-sha2-nistp256", "nistp256", "P-256", 32],
    ["ecdsa-P-384", "ecdsa-sha2-nistp384", "nistp384", "P-384", 48],
    ["ecdsa-P-521", "ecdsa-sha2-nistp521", "nistp521", "P-521", 66],
  ] as const;
  const primes = {
    "P-256": 2n ** 256n - 2n ** 224n + 2n ** 192n + 2n ** 96n - 1n,
    "P-384": 2n ** 384n - 2n ** 128n - 2n ** 96n + 2n ** 32n - 1n,
    "P-521": 2n ** 521n - 1n,
  };
  const toBytes = (n: bigint, size: number) =>
    Uint8Array.from(
      n
        .toString(16)
        .padStart(size * 2, "0")
        .match(/../g)!,
      (h) => Number.parseInt(h, 16),
    );
  const toBig = (b: Uint8Array) => BigInt(`0x${Buffer.from(b).toString("hex")}`);

  // Our parser checks y^2 = x^3 - 3x + b itself (node's JWK import costs ~70 µs); node is the reference here.
  it.each(curves)(
    "for %s: valid, negated, bit-flipped and random points",
    async (name, algorithm, curve, crv, size) => {
      const r = new SshReader(sshPublicKeyBlob(keys.get(name)!.publicKeySpkiDer));
      r.string();
      r.string();
      const point = r.string();
      const x0 = toBig(point.subarray(1, 1 + size));
      const y0 = toBig(point.subarray(1 + size));
      const p = primes[crv];
      await fc.assert(
        fc.property(
          fc.constantFrom("same", "negate", "flip", "random"),
          fc.nat({ max: size * 8 - 1 }),
          fc.boolean(),
          fc.bigInt({ min: 0n, max: p - 1n }),
          fc.bigInt({ min: 0n, max: p - 1n }),
          (mode, bit, flipX, rx, ry) => {
            let [x, y] = [x0, y0];
            if (mode === "negate") y = p - y0;
            if (mode === "flip") {
              if (flipX) x ^= 1n << BigInt(bit);
              else y ^= 1n << BigInt(bit);
            }
            if (mode === "random") [x, y] = [rx, ry];
            if (x >= p || y >= p) return;
            const [xb, yb] = [toBytes(x, size), toBytes(y, size)];
            let nodeAccepts = true;
            try {
              createPublicKey({
                key: {
                  kty: "EC",
                  crv,
                  x: Buffer.from(xb).toString("base64url"),
                  y: Buffer.from(yb).toString("base64url"),
                },
                format: "jwk",
              });
            } catch {
              nodeAccepts = false;
            }
            const blob = new SshWriter()
              .string(algorithm)
              .string(curve)
              .string(concatBytes(new Uint8Array([4]), xb, yb))
              .bytes();
            let weAccept = true;
            try {
              parseSshPublicKey(lineOf(algorithm, blob));
            } catch (err) {
              expect(err).toBeInstanceOf(SshKeyParseError);
              weAccept = false;
            }
            expect(weAccept).toBe(nodeAccepts);
            if (mode === "same" || mode === "negate") expect(weAccept).toBe(true);
          },
        ),
        { numRuns: 400 },
      );
    },
  );
});

describe("property: nothing but SshKeyParseError escapes", () => {
  /** Either a valid key (which then re-parses to itself) or an SshKeyParseError; anything else fails. */
  function parsesOrRefuses(line: string): void {
    let parsed: ParsedSshPublicKey;
    try {
      parsed = parseSshPublicKey(line);
    } catch (err) {
      if (!(err instanceof SshKeyParseError)) throw err;
      expect(err.reason.length).toBeGreaterThan(0);
      return;
    }
    expect(parseSshPublicKey(lineOf(parsed.algorithm, parsed.blob)).blob).toEqual(parsed.blob);
  }

  const types = [
    "ssh-ed25519",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "ssh-rsa",
    "ssh-ed25519-cert-v01@openssh.com",
    "sk-ssh-ed25519@openssh.com",
  ];

  it("for arbitrary strings", async () => {
    await fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 300 }), (s) => {
        expect(() => parseSshPublicKey(s)).toThrow(SshKeyParseError);
      }),
      { numRuns: 2000 },
    );
  });

  it("for arbitrary bytes behind every key type", async () => {
    await fc.assert(
      fc.property(fc.constantFrom(...types), fc.uint8Array({ maxLength: 600 }), (type, blob) => {
        parsesOrRefuses(lineOf(type, blob));
      }),
      { numRuns: 2000 },
    );
  });

  it("for well-formed wire fields with random contents", async () => {
    const field = fc.oneof(
      fc.constantFrom(...types).map((t) => new TextEncoder().encode(t)),
      fc.constantFrom("nistp256", "nistp384", "nistp521", "").map((t) => new TextEncoder().encode(t)),
      fc.uint8Array({ maxLength: 300 }),
    );
    await fc.assert(
      fc.property(fc.constantFrom(...types), fc.array(field, { maxLength: 4 }), (type, fields) => {
        const w = new SshWriter();
        for (const f of fields) w.string(f);
        parsesOrRefuses(lineOf(type, w.bytes(), "c"));
      }),
      { numRuns: 2000 },
    );
  });

  it("for mutated valid keys: flipped bytes, truncation, extension, spliced text", async () => {
    const valid = () =>
      [...keys.values()]
        .filter((k) => k.spec.type !== "rsa" || k.spec.bits === 2048)
        .map((k) => sshPublicKeyLine(k.publicKeySpkiDer, "me@host"));
    await fc.assert(
      fc.property(
        fc.constantFrom(...valid()),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 1, max: 255 })), { minLength: 1, maxLength: 4 }),
        fc.nat(),
        fc.uint8Array({ maxLength: 8 }),
        fc.constantFrom("flip", "truncate", "extend", "text"),
        (line, flips, cut, extra, mode) => {
          const [type, data] = line.split(" ") as [string, string];
          const blob = new Uint8Array(Buffer.from(data, "base64"));
          let mutated: string;
          switch (mode) {
            case "flip":
              for (const [at, mask] of flips) blob[at % blob.length] = blob[at % blob.length]! ^ mask;
              mutated = lineOf(type, blob, "me@host");
              break;
            case "truncate":
              mutated = lineOf(type, blob.subarray(0, cut % blob.length), "me@host");
              break;
            case "extend":
              mutated = lineOf(type, concatBytes(blob, extra), "me@host");
              break;
            default: {
              const at = cut % line.length;
              mutated = `${line.slice(0, at)}${String.fromCharCode(...extra)}${line.slice(at + 1)}`;
            }
          }
          parsesOrRefuses(mutated);
        },
      ),
      { numRuns: 3000 },
    );
  });
});
