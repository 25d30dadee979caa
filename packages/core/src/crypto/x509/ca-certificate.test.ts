import { execFile } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GeneratedKey, generateKeyPair } from "../generate-key.js";
import { allCaKeySpecs, describeKeySpec } from "../key-types.js";
import { createCaCertificate } from "./ca-certificate.js";

const run = promisify(execFile);

let dir: string;
const keys = new Map<string, GeneratedKey>();

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "wap-x509-ca-"));
  const generated = await Promise.all(allCaKeySpecs.map((spec) => generateKeyPair(spec)));
  for (const key of generated) keys.set(describeKeySpec(key.spec), key);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const notBefore = new Date("2025-01-01T00:00:00Z");
const notAfter = new Date("2035-01-01T00:00:00Z");
const serial = () => Uint8Array.from({ length: 16 }, (_, i) => (i === 0 ? 0xf3 : i * 7));

const expectedSignature: Record<string, RegExp> = {
  ed25519: /Signature Algorithm: ED25519/,
  "ecdsa-P-256": /Signature Algorithm: ecdsa-with-SHA256/,
  "ecdsa-P-384": /Signature Algorithm: ecdsa-with-SHA384/,
  "ecdsa-P-521": /Signature Algorithm: ecdsa-with-SHA512/,
  "rsa-2048": /Signature Algorithm: sha256WithRSAEncryption/,
  "rsa-3072": /Signature Algorithm: sha256WithRSAEncryption/,
  "rsa-4096": /Signature Algorithm: sha256WithRSAEncryption/,
};

describe.each(allCaKeySpecs.map((spec) => describeKeySpec(spec)))("%s", (name) => {
  it("is a CA certificate that openssl parses and verifies against itself", async () => {
    const ca = await createCaCertificate({
      key: keys.get(name)!,
      subject: { commonName: `WAP Test CA ${name}`, organization: "Acme, Inc." },
      notBefore,
      notAfter,
      serialNumber: serial(),
    });
    expect(ca.pem.startsWith("-----BEGIN CERTIFICATE-----")).toBe(true);
    expect(ca.serialHex).toBe("73070e151c232a31383f464d545b6269");
    expect(ca.notBefore).toEqual(notBefore);
    expect(ca.notAfter).toEqual(notAfter);
    expect(ca.subject).toContain(`CN=WAP Test CA ${name}`);

    const file = join(dir, `${name}.pem`);
    await writeFile(file, ca.pem);
    const { stdout: text } = await run("openssl", ["x509", "-noout", "-text", "-in", file]);
    expect(text).toMatch(/CA:TRUE, pathlen:0/);
    expect(text).toMatch(/X509v3 Basic Constraints: critical/);
    expect(text).toMatch(/X509v3 Key Usage: critical\s+Certificate Sign, CRL Sign/);
    expect(text).toMatch(/X509v3 Subject Key Identifier/);
    expect(text).toMatch(/X509v3 Authority Key Identifier/);
    expect(text).toMatch(expectedSignature[name]!);
    expect(text).toContain(`Subject: O = "Acme, Inc.", CN = WAP Test CA ${name}`);
    expect(text).toContain(`Issuer: O = "Acme, Inc.", CN = WAP Test CA ${name}`);

    const { stdout: serialOut } = await run("openssl", ["x509", "-noout", "-serial", "-in", file]);
    expect(serialOut.trim()).toBe(`serial=${ca.serialHex.toUpperCase()}`);

    const { stdout: verify } = await run("openssl", ["verify", "-CAfile", file, file]);
    expect(verify.trim()).toBe(`${file}: OK`);

    // node's parser agrees, and the certificate carries the generated public key.
    const parsed = new X509Certificate(ca.pem);
    expect(parsed.ca).toBe(true);
    const spki = parsed.publicKey.export({ format: "der", type: "spki" });
    expect(new Uint8Array(spki)).toEqual(keys.get(name)!.publicKeySpkiDer);
  });
});

describe("createCaCertificate", () => {
  const key = () => keys.get("ed25519")!;

  it("clears the top bit of the serial and drops leading zero bytes", async () => {
    const ca = await createCaCertificate({
      key: key(),
      subject: { commonName: "Serial" },
      notBefore,
      notAfter,
      serialNumber: new Uint8Array([0x80, 0x00, 0x01, 0xff]),
    });
    expect(ca.serialHex).toBe("01ff");
    expect(new X509Certificate(ca.pem).serialNumber).toBe("01FF");
  });

  it("omits the organization when none is given", async () => {
    const ca = await createCaCertificate({
      key: key(),
      subject: { commonName: "Only CN" },
      notBefore,
      notAfter,
      serialNumber: serial(),
    });
    expect(ca.subject).toBe("CN=Only CN");
  });

  it("encodes names literally, with no DN-string parsing of quotes, backslashes or a leading #", async () => {
    for (const commonName of ['A+B=C "q"', "x\\y", "#not-hex", " lead", "日本語 CA"]) {
      const ca = await createCaCertificate({
        key: key(),
        subject: { commonName, organization: "#org" },
        notBefore,
        notAfter,
        serialNumber: serial(),
      });
      // node's legacy object holds the decoded attribute values, without RFC 4514 escaping.
      const { subject } = new X509Certificate(ca.pem).toLegacyObject();
      expect(subject).toEqual({ O: "#org", CN: commonName });
    }
  });

  it("encodes validity after 2049 as GeneralizedTime", async () => {
    const late = new Date("2060-06-30T12:00:00Z");
    const ca = await createCaCertificate({
      key: key(),
      subject: { commonName: "Long lived" },
      notBefore,
      notAfter: late,
      serialNumber: serial(),
    });
    expect(ca.notAfter).toEqual(late);
    expect(new Date(new X509Certificate(ca.pem).validTo)).toEqual(late);
  });

  it("rejects bad serials and inverted validity", async () => {
    const base = { key: key(), subject: { commonName: "x" }, notBefore, notAfter };
    await expect(createCaCertificate({ ...base, serialNumber: new Uint8Array(0) })).rejects.toThrow(
      RangeError,
    );
    await expect(createCaCertificate({ ...base, serialNumber: new Uint8Array(21) })).rejects.toThrow(
      RangeError,
    );
    await expect(createCaCertificate({ ...base, serialNumber: new Uint8Array(16) })).rejects.toThrow(
      RangeError,
    );
    await expect(
      createCaCertificate({ ...base, notBefore: notAfter, notAfter: notBefore, serialNumber: serial() }),
    ).rejects.toThrow(RangeError);
  });
});
