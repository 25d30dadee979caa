import "reflect-metadata";
import { execFile } from "node:child_process";
import { webcrypto } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import * as x509 from "@peculiar/x509";
import * as fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { concatBytes } from "../../lib/bytes.js";
import { fromPem, toPem } from "../../lib/pem.js";
import { generateKeyPair } from "../generate-key.js";
import { allCaKeySpecs, describeKeySpec } from "../key-types.js";
import { createCaCertificate } from "./ca-certificate.js";
import {
  CsrParseError,
  createX509LeafSigner,
  type IssueLeafParams,
  issueLeafCertificate,
  type ParsedCsr,
  parseCsr,
  type X509LeafCa,
  type X509LeafSigner,
  type X509Usage,
} from "./leaf-certificate.js";

const run = promisify(execFile);

let dir: string;
let fileCounter = 0;

async function openssl(args: readonly string[]): Promise<string> {
  const { stdout } = await run("openssl", args);
  return stdout;
}

const leafKeyArgs = {
  ed25519: ["-algorithm", "ED25519"],
  "ecdsa-P-256": ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"],
  "ecdsa-P-384": ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384"],
  "ecdsa-P-521": ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-521"],
  "rsa-2048": ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"],
  "rsa-1024": ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024"],
  "ecdsa-P-224": ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-224"],
  ed448: ["-algorithm", "ED448"],
} as const;
type LeafKey = keyof typeof leafKeyArgs;

const leafKeyFiles = new Map<LeafKey, string>();

async function leafKeyFile(key: LeafKey): Promise<string> {
  let file = leafKeyFiles.get(key);
  if (file === undefined) {
    file = join(dir, `leaf-${key}.key`);
    await openssl(["genpkey", ...leafKeyArgs[key], "-out", file]);
    leafKeyFiles.set(key, file);
  }
  return file;
}

const SANS =
  "DNS:alice.example.com,DNS:*.svc.example.com,IP:10.1.2.3,IP:2001:db8::1,email:alice@example.com,URI:spiffe://example.com/alice";

/** A CSR made by `openssl req`, as the CLI's users would make one. */
async function csrPem(key: LeafKey, options: { subj?: string; sans?: string | null; extra?: string[] } = {}) {
  const out = join(dir, `csr-${++fileCounter}.pem`);
  const sans = options.sans === undefined ? SANS : options.sans;
  await openssl([
    "req",
    "-new",
    "-key",
    await leafKeyFile(key),
    "-subj",
    options.subj ?? "/CN=alice/O=Example",
    ...(sans === null ? [] : ["-addext", `subjectAltName=${sans}`]),
    ...(options.extra ?? []),
    "-out",
    out,
  ]);
  return readFile(out, "utf8");
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "wap-x509-leaf-"));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function csrError(pem: string): CsrParseError {
  try {
    parseCsr(pem);
  } catch (err) {
    expect(err).toBeInstanceOf(CsrParseError);
    return err as CsrParseError;
  }
  throw new Error("expected the CSR to be refused");
}

describe("parseCsr", () => {
  it.each([
    ["ed25519", "ed25519", 256],
    ["ecdsa-P-256", "ecdsa", 256],
    ["ecdsa-P-384", "ecdsa", 384],
    ["ecdsa-P-521", "ecdsa", 521],
    ["rsa-2048", "rsa", 2048],
  ] as const)("reads an openssl %s CSR: key, CN and every SAN type", async (key, keyType, bits) => {
    const csr = parseCsr(await csrPem(key));
    expect(csr.commonName).toBe("alice");
    expect(csr.subject).toBe("CN=alice, O=Example");
    expect(csr.publicKey).toMatchObject({ keyType, bits });
    expect(csr.publicKey.fingerprint).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
    expect(csr.sans).toEqual({
      dns: ["alice.example.com", "*.svc.example.com"],
      ip: ["10.1.2.3", "2001:db8::1"],
      email: ["alice@example.com"],
      uri: ["spiffe://example.com/alice"],
    });
    // The SPKI is the key openssl holds.
    const spki = fromPem("PUBLIC KEY", await openssl(["pkey", "-in", await leafKeyFile(key), "-pubout"]));
    expect(csr.publicKey.spkiDer).toEqual(spki);
  });

  it("reads a CSR with no SAN and no CN, and ECDSA signatures with SHA-384", async () => {
    const csr = parseCsr(await csrPem("ecdsa-P-256", { subj: "/O=Example", sans: null, extra: ["-sha384"] }));
    expect(csr.commonName).toBeUndefined();
    expect(csr.sans).toEqual({ dns: [], ip: [], email: [], uri: [] });
  });

  it("accepts the older NEW CERTIFICATE REQUEST label and text around the block", async () => {
    const pem = await csrPem("ed25519");
    const legacy = pem.replace(/CERTIFICATE REQUEST/g, "NEW CERTIFICATE REQUEST");
    expect(parseCsr(`junk before\n${legacy}\njunk after`).commonName).toBe("alice");
  });

  it.each<[string, () => Promise<string>, RegExp]>([
    ["an RSA-1024 key", () => csrPem("rsa-1024"), /at least 2048 bits \(got 1024\)/],
    ["a P-224 key", () => csrPem("ecdsa-P-224"), /unsupported EC curve secp224r1/],
    ["an Ed448 key", () => csrPem("ed448"), /unsupported public key type ed448/],
    [
      "a SHA-1 signature",
      () => csrPem("rsa-2048", { extra: ["-sha1"] }),
      /unsupported CSR signature algorithm/,
    ],
    [
      "an RSA-PSS signature",
      () => csrPem("rsa-2048", { extra: ["-sigopt", "rsa_padding_mode:pss"] }),
      /unsupported CSR signature algorithm/,
    ],
    ["two CNs", () => csrPem("ed25519", { subj: "/CN=a/CN=b" }), /more than one CN/],
    [
      "an otherName SAN",
      () => csrPem("ed25519", { sans: "DNS:a.example,otherName:1.2.3.4;UTF8:x" }),
      /subjectAltName of unsupported type/,
    ],
    ["a registeredID SAN", () => csrPem("ed25519", { sans: "RID:1.2.3.4" }), /unsupported type id/],
    [
      "an otherName SAN even when @peculiar/x509 knows it (UPN)",
      () => csrPem("ed25519", { sans: "otherName:1.3.6.1.4.1.311.20.2.3;UTF8:alice@example.com" }),
      /unsupported type upn/,
    ],
  ])("refuses %s", async (_, make, reason) => {
    expect(csrError(await make()).reason).toMatch(reason);
  });

  it("refuses a CSR whose signature or signed content was changed", async () => {
    const der = fromPem("CERTIFICATE REQUEST", await csrPem("ecdsa-P-256"))!;
    const lastByte = new Uint8Array(der);
    lastByte[lastByte.length - 1] = lastByte[lastByte.length - 1]! ^ 1;
    expect(csrError(toPem("CERTIFICATE REQUEST", lastByte)).reason).toMatch(/signature/);

    const pem = await csrPem("ed25519");
    const body = fromPem("CERTIFICATE REQUEST", pem)!;
    const at = Buffer.from(body).indexOf("alice");
    const renamed = new Uint8Array(body);
    renamed[at] = "m".charCodeAt(0);
    expect(csrError(toPem("CERTIFICATE REQUEST", renamed)).reason).toBe("CSR signature does not verify");
  });

  it("refuses what is not a single DER CSR", async () => {
    const der = fromPem("CERTIFICATE REQUEST", await csrPem("ed25519"))!;
    expect(csrError("").reason).toMatch(/expected a PEM block/);
    expect(csrError(toPem("CERTIFICATE", der)).reason).toMatch(/expected a PEM block/);
    expect(csrError(toPem("CERTIFICATE REQUEST", new Uint8Array(0))).reason).toMatch(/empty/);
    expect(csrError(toPem("CERTIFICATE REQUEST", concatBytes(der, new Uint8Array([0])))).reason).toMatch(
      /unexpected bytes after/,
    );
    // BER indefinite length on the outer SEQUENCE.
    const indefinite = concatBytes(new Uint8Array([0x30, 0x80]), der.subarray(4), new Uint8Array([0, 0]));
    expect(csrError(toPem("CERTIFICATE REQUEST", indefinite)).reason).toMatch(/indefinite/);
    // The outer length in one byte more than it needs (DER allows one encoding per length).
    expect(der[1]).toBe(0x82);
    const longer = concatBytes(new Uint8Array([0x30, 0x83, 0x00]), der.subarray(2));
    expect(csrError(toPem("CERTIFICATE REQUEST", longer)).reason).toMatch(/not DER/);
    expect(
      csrError("-----BEGIN CERTIFICATE REQUEST-----\n!!!\n-----END CERTIFICATE REQUEST-----").reason,
    ).toMatch(/expected a PEM block/);
    expect(csrError("x".repeat(70000)).reason).toMatch(/longer than/);
    expect(csrError(7 as unknown as string).reason).toMatch(/PEM string/);
  });
});

describe("property: nothing but CsrParseError escapes", () => {
  const samples: Uint8Array[] = [];

  beforeAll(async () => {
    for (const key of ["ed25519", "ecdsa-P-256", "rsa-2048"] as const) {
      samples.push(fromPem("CERTIFICATE REQUEST", await csrPem(key))!);
    }
  });

  function parsesOrRefuses(pem: string): ParsedCsr | undefined {
    try {
      return parseCsr(pem);
    } catch (err) {
      if (!(err instanceof CsrParseError)) throw err;
      expect(err.reason.length).toBeGreaterThan(0);
      return undefined;
    }
  }

  it("for arbitrary strings and arbitrary bytes in PEM armour", async () => {
    await fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 400 }), (s) => {
        expect(() => parseCsr(s)).toThrow(CsrParseError);
      }),
      { numRuns: 1000 },
    );
    await fc.assert(
      fc.property(fc.uint8Array({ maxLength: 600 }), (bytes) => {
        expect(() => parseCsr(toPem("CERTIFICATE REQUEST", bytes))).toThrow(CsrParseError);
      }),
      { numRuns: 1000 },
    );
  });

  it("for mutated openssl CSRs: flipped bytes, truncation, insertion", async () => {
    await fc.assert(
      fc.property(
        fc.nat({ max: 2 }),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 1, max: 255 })), { minLength: 1, maxLength: 3 }),
        fc.nat(),
        fc.uint8Array({ minLength: 1, maxLength: 6 }),
        fc.constantFrom("flip", "truncate", "insert"),
        (which, flips, at, extra, mode) => {
          const der = new Uint8Array(samples[which]!);
          let mutated: Uint8Array;
          if (mode === "flip") {
            for (const [i, mask] of flips) der[i % der.length] = der[i % der.length]! ^ mask;
            mutated = der;
          } else if (mode === "truncate") {
            mutated = der.subarray(0, at % der.length);
          } else {
            const i = at % der.length;
            mutated = concatBytes(der.subarray(0, i), extra, der.subarray(i));
          }
          // A changed byte either breaks the structure or the signature; nothing may parse differently.
          const parsed = parsesOrRefuses(toPem("CERTIFICATE REQUEST", mutated));
          if (parsed !== undefined) expect(parsed.publicKey.spkiDer.length).toBeGreaterThan(0);
        },
      ),
      { numRuns: 1500 },
    );
  });
});

describe("property: correctly signed CSRs with arbitrary names", () => {
  // Mutations of a signed CSR stop at the signature check; these reach the name and SAN parsing.
  const crypto = webcrypto as unknown as Parameters<typeof x509.Pkcs10CertificateRequestGenerator.create>[1];
  let keys: webcrypto.CryptoKeyPair;
  let validSan: Uint8Array;

  beforeAll(async () => {
    keys = (await webcrypto.subtle.generateKey({ name: "Ed25519" }, false, [
      "sign",
      "verify",
    ])) as webcrypto.CryptoKeyPair;
    const ext = new x509.SubjectAlternativeNameExtension([
      { type: "dns", value: "a.example" },
      { type: "ip", value: "10.0.0.1" },
      { type: "email", value: "a@example.com" },
      { type: "url", value: "https://a.example/" },
    ]);
    validSan = new Uint8Array(ext.value);
  });

  const sign = async (commonName: string, san: Uint8Array | undefined) => {
    const csr = await x509.Pkcs10CertificateRequestGenerator.create(
      {
        name: new x509.Name([{ CN: [{ utf8String: commonName }] }]),
        keys: keys as never,
        signingAlgorithm: { name: "Ed25519" },
        extensions: san === undefined ? [] : [new x509.Extension("2.5.29.17", false, san)],
      },
      crypto,
    );
    return csr.toString("pem");
  };

  it("parses them or refuses them with CsrParseError, and never returns control characters", async () => {
    const san = fc.oneof(
      fc.constant(undefined),
      fc.uint8Array({ maxLength: 80 }),
      fc
        .tuple(fc.array(fc.tuple(fc.nat(), fc.integer({ min: 1, max: 255 })), { minLength: 1, maxLength: 3 }))
        .map(([flips]) => {
          const out = new Uint8Array(validSan);
          for (const [i, mask] of flips) out[i % out.length] = out[i % out.length]! ^ mask;
          return out;
        }),
    );
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: "binary", maxLength: 40 }), san, async (cn, sanBytes) => {
        const pem = await sign(cn, sanBytes);
        let parsed: ParsedCsr;
        try {
          parsed = parseCsr(pem);
        } catch (err) {
          if (!(err instanceof CsrParseError)) throw err;
          return;
        }
        for (const value of [parsed.commonName ?? "x", ...Object.values(parsed.sans).flat()]) {
          // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what must not come back.
          expect(value).not.toMatch(/[\u0000-\u001f\u007f]/);
          expect(value.length).toBeGreaterThan(0);
        }
      }),
      { numRuns: 400 },
    );
  });
});

describe("issueLeafCertificate", () => {
  const signers = new Map<string, X509LeafSigner>();
  const cas = new Map<string, X509LeafCa & { file: string; ski: string }>();
  const csrs = new Map<string, ParsedCsr>();
  const leafKeys = ["ed25519", "ecdsa-P-256", "ecdsa-P-384", "ecdsa-P-521", "rsa-2048"] as const;
  const now = Date.now();

  beforeAll(async () => {
    for (const key of leafKeys) csrs.set(key, parseCsr(await csrPem(key)));
    await Promise.all(
      allCaKeySpecs.map(async (spec) => {
        const name = describeKeySpec(spec);
        const key = await generateKeyPair(spec);
        const cert = await createCaCertificate({
          key,
          subject: { commonName: `Leaf Test CA ${name}`, organization: "Example" },
          notBefore: new Date(now - 86400_000),
          notAfter: new Date(now + 365 * 86400_000),
          serialNumber: new Uint8Array(16).fill(0x42),
        });
        const file = join(dir, `ca-${name}.pem`);
        await writeFile(file, cert.pem);
        const text = await openssl(["x509", "-noout", "-text", "-in", file]);
        const ski = /Subject Key Identifier:\s*\n\s*([0-9A-F:]+)/.exec(text)![1]!;
        const ca = { certificatePem: cert.pem, privateKeyPkcs8Der: key.privateKeyPkcs8Der, spec, file, ski };
        cas.set(name, ca);
        signers.set(name, await createX509LeafSigner(ca));
      }),
    );
  });

  const base = (csr: ParsedCsr, usage: X509Usage): IssueLeafParams => ({
    csr,
    subject: { commonName: "alice", organization: "Example" },
    sans: csr.sans,
    usage,
    notBefore: new Date(now - 5 * 60_000),
    notAfter: new Date(now + 86400_000),
    serialNumber: Uint8Array.from({ length: 16 }, (_, i) => 0x80 + i),
  });

  const ekuText = {
    client: "TLS Web Client Authentication",
    server: "TLS Web Server Authentication",
    both: "TLS Web Server Authentication, TLS Web Client Authentication",
  } as const;
  const purposes = {
    client: ["sslclient"],
    server: ["sslserver"],
    both: ["sslclient", "sslserver"],
  } as const;

  describe.each(allCaKeySpecs.map((spec) => describeKeySpec(spec)))("from a %s CA", (caName) => {
    // Concurrent: each case spawns openssl three or four times.
    it.concurrent.for(
      (["client", "server", "both"] as const).flatMap((usage) =>
        leafKeys.map((key) => [usage, key] as const),
      ),
    )("issues a %s leaf for a %s key that openssl verifies", async ([usage, key], { expect }) => {
      const ca = cas.get(caName)!;
      const leaf = await signers.get(caName)!.issue(base(csrs.get(key)!, usage));
      // The top bit is cleared (0x80 -> 0x00) and the leading zero byte dropped.
      expect(leaf.serialHex).toBe("8182838485868788898a8b8c8d8e8f");
      const file = join(dir, `leaf-${caName}-${usage}-${key}.pem`);
      await writeFile(file, leaf.pem);

      const verified = await openssl(["verify", "-x509_strict", "-CAfile", ca.file, file]);
      expect(verified.trim()).toBe(`${file}: OK`);
      for (const purpose of purposes[usage]) {
        expect(await openssl(["verify", "-purpose", purpose, "-CAfile", ca.file, file])).toContain(": OK");
      }

      const text = await openssl(["x509", "-noout", "-text", "-in", file]);
      expect(text).toMatch(/X509v3 Basic Constraints: critical\s*\n\s*CA:FALSE/);
      expect(text).toMatch(
        key === "rsa-2048"
          ? /X509v3 Key Usage: critical\s*\n\s*Digital Signature, Key Encipherment\n/
          : /X509v3 Key Usage: critical\s*\n\s*Digital Signature\n/,
      );
      expect(text).toMatch(new RegExp(`X509v3 Extended Key Usage: \\s*\\n\\s*${ekuText[usage]}\\n`));
      expect(text).toContain(
        "DNS:alice.example.com, DNS:*.svc.example.com, IP Address:10.1.2.3, IP Address:2001:DB8:0:0:0:0:0:1, " +
          "email:alice@example.com, URI:spiffe://example.com/alice",
      );
      expect(text).toMatch(new RegExp(`X509v3 Authority Key Identifier: \\s*\\n\\s*(keyid:)?${ca.ski}\\n`));
      expect(text).toMatch(/X509v3 Subject Key Identifier: \s*\n\s*[0-9A-F:]+\n/);
      expect(text).toContain("Subject: O = Example, CN = alice");
    });
  });

  it("signs a CRL whose cRLNumber openssl reads back, from 0 to past 64 bits, high bit set or not", async () => {
    const ca = cas.get("ecdsa-P-256")!;
    for (const crlNumber of [0n, 127n, 128n, 255n, 65_535n, 2n ** 64n + 1n, 2n ** 159n]) {
      const der = await signers.get("ecdsa-P-256")!.signCrl({
        entries: [],
        thisUpdate: new Date("2026-01-01T00:00:00Z"),
        nextUpdate: new Date("2026-01-08T00:00:00Z"),
        crlNumber,
      });
      const file = join(dir, `crl-${crlNumber}.der`);
      await writeFile(file, der);
      const text = await openssl(["crl", "-inform", "DER", "-noout", "-text", "-in", file]);
      const shown = /X509v3 CRL Number: \s*\n\s*(\S+)\n/.exec(text)?.[1];
      // openssl shows small numbers in decimal, large ones in hex ("0x..." or colon-separated bytes).
      const read = shown?.includes(":") ? BigInt(`0x${shown.replaceAll(":", "")}`) : BigInt(shown ?? "-1");
      expect(read).toBe(crlNumber);
      await openssl(["crl", "-inform", "DER", "-noout", "-CAfile", ca.file, "-in", file]);
    }
  });

  it("refuses the wrong purpose: a client-only leaf is not a server certificate", async () => {
    const ca = cas.get("ecdsa-P-256")!;
    const leaf = await signers.get("ecdsa-P-256")!.issue(base(csrs.get("ed25519")!, "client"));
    const file = join(dir, "client-only.pem");
    await writeFile(file, leaf.pem);
    await expect(openssl(["verify", "-purpose", "sslserver", "-CAfile", ca.file, file])).rejects.toThrow(
      /unsuitable certificate purpose/,
    );
  });

  it("issues with only some SAN types, or none, and returns the encoded validity", async () => {
    const notBefore = new Date("2026-01-01T00:00:00.400Z");
    const leaf = await signers.get("ed25519")!.issue({
      ...base(csrs.get("ed25519")!, "server"),
      sans: { dns: ["only.example"], ip: [], email: [], uri: [] },
      notBefore,
    });
    expect(leaf.notBefore).toEqual(new Date("2026-01-01T00:00:00Z"));
    const file = join(dir, "dns-only.pem");
    await writeFile(file, leaf.pem);
    const text = await openssl(["x509", "-noout", "-text", "-in", file]);
    expect(text).toMatch(/X509v3 Subject Alternative Name: \s*\n\s*DNS:only.example\n/);

    const none = await signers.get("ed25519")!.issue({
      ...base(csrs.get("ed25519")!, "client"),
      sans: { dns: [], ip: [], email: [], uri: [] },
    });
    await writeFile(file, none.pem);
    expect(await openssl(["x509", "-noout", "-text", "-in", file])).not.toContain("Subject Alternative Name");
  });

  it("gives the same result through issueLeafCertificate", async () => {
    const ca = cas.get("rsa-2048")!;
    const leaf = await issueLeafCertificate({ ...base(csrs.get("ecdsa-P-256")!, "both"), ca });
    const file = join(dir, "one-shot.pem");
    await writeFile(file, leaf.pem);
    expect(await openssl(["verify", "-CAfile", ca.file, file])).toContain(": OK");
  });

  it("refuses a validity beyond the CA's, an inverted validity, and an empty CN", async () => {
    const signer = signers.get("ed25519")!;
    const p = base(csrs.get("ed25519")!, "client");
    await expect(signer.issue({ ...p, notAfter: new Date(now + 400 * 86400_000) })).rejects.toThrow(
      /CA's notAfter/,
    );
    await expect(signer.issue({ ...p, notBefore: p.notAfter })).rejects.toThrow(/notBefore must be before/);
    await expect(signer.issue({ ...p, subject: { commonName: "" } })).rejects.toThrow(/commonName/);
  });

  it("refuses a CA key that does not belong to the CA certificate", async () => {
    const other = cas.get("ed25519")!;
    const wrongKey = await generateKeyPair({ type: "ed25519" });
    await expect(
      createX509LeafSigner({ ...other, privateKeyPkcs8Der: wrongKey.privateKeyPkcs8Der }),
    ).rejects.toThrow(/does not belong/);
  });
});
