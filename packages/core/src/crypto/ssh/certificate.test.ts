import { execFile } from "node:child_process";
import { createPublicKey, verify } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { sshFingerprintSha256, sshPublicKeyLine } from "@wap/ssh-wire";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sshCaKeySpecs, sshSubjectKeySpecs } from "../../../test/support/key-specs.js";
import { decodeBase64Lenient } from "../../lib/base64.js";
import { fromUtf8 } from "../../lib/bytes.js";
import { SshReader } from "../../lib/ssh-wire.js";
import { type GeneratedKey, generateKeyPair } from "../generate-key.js";
import { describeKeySpec } from "../key-types.js";
import {
  createSshCertificateSigner,
  type SshCertificateParams,
  type SshCertificateSigner,
  signSshCertificate,
  standardUserExtensions,
} from "./certificate.js";
import { type ParsedSshPublicKey, parseSshPublicKey } from "./parse-public-key.js";

const run = promisify(execFile);

const caSpecs = sshCaKeySpecs;
const userKeySpecs = sshSubjectKeySpecs;

let dir: string;
const caKeys = new Map<string, GeneratedKey>();
const signers = new Map<string, SshCertificateSigner>();
const userKeys = new Map<string, ParsedSshPublicKey>();

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "wap-ssh-cert-"));
  const [cas, users] = await Promise.all([
    Promise.all(caSpecs.map((spec) => generateKeyPair(spec))),
    Promise.all(userKeySpecs.map((spec) => generateKeyPair(spec))),
  ]);
  for (const key of cas) {
    caKeys.set(describeKeySpec(key.spec), key);
    signers.set(describeKeySpec(key.spec), createSshCertificateSigner(key.privateKeyPkcs8Der, key.spec));
  }
  for (const key of users) {
    const name = describeKeySpec(key.spec);
    userKeys.set(name, parseSshPublicKey(sshPublicKeyLine(key.publicKeySpkiDer, `${name}@platform`)));
  }
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const validAfter = new Date("2026-03-01T11:55:00.750Z");
const validBefore = new Date("2026-03-01T20:00:00Z");

function params(
  publicKey: ParsedSshPublicKey,
  overrides: Partial<SshCertificateParams> = {},
): SshCertificateParams {
  return {
    publicKey,
    type: "user",
    serial: 0xfedcba9876543210n,
    keyId: "req-6f1c user@example",
    principals: ["0b6c5a9e-6d1e-4c1f-9a57-1f0e0d8b7c11", "team-ops"],
    validAfter,
    validBefore,
    criticalOptions: { "source-address": "10.0.0.0/8,192.168.1.1/32", "force-command": "/bin/echo hello" },
    extensions: { ...standardUserExtensions, "login@example.com": "alice" },
    ...overrides,
  };
}

let fileCounter = 0;
async function keygenList(line: string): Promise<string> {
  const file = join(dir, `c${++fileCounter}-cert.pub`);
  await writeFile(file, `${line}\n`);
  // ssh-keygen -L verifies the CA signature while parsing; TZ pins the printed validity.
  const { stdout } = await run("ssh-keygen", ["-L", "-f", file], { env: { ...process.env, TZ: "UTC" } });
  return stdout;
}

const signatureAlgorithm: Record<string, string> = {
  ed25519: "ssh-ed25519",
  "ecdsa-P-256": "ecdsa-sha2-nistp256",
  "ecdsa-P-384": "ecdsa-sha2-nistp384",
  "ecdsa-P-521": "ecdsa-sha2-nistp521",
  "rsa-2048": "rsa-sha2-512",
  "rsa-4096": "rsa-sha2-512",
};
const keygenCaType: Record<string, string> = { ed25519: "ED25519", ecdsa: "ECDSA", rsa: "RSA" };

describe.each(
  caSpecs.flatMap((ca) => userKeySpecs.map((user) => [describeKeySpec(ca), describeKeySpec(user)] as const)),
)("a %s CA signing a %s key", (ca, user) => {
  it("makes a user certificate that ssh-keygen -L lists with every field", async () => {
    const key = userKeys.get(user)!;
    const signer = signers.get(ca)!;
    const line = signer.sign(params(key));
    expect(line.startsWith(`${key.algorithm}-cert-v01@openssh.com AAAA`)).toBe(true);
    expect(line.endsWith(` ${user}@platform`)).toBe(true);

    const listing = await keygenList(line);
    const caType = keygenCaType[caSpecs.find((s) => describeKeySpec(s) === ca)!.type];
    expect(listing).toContain(`Type: ${key.algorithm}-cert-v01@openssh.com user certificate`);
    expect(listing).toMatch(new RegExp(`Public key: \\S+-CERT ${escapeRegExp(key.fingerprint)}\\n`));
    expect(listing).toContain(
      `Signing CA: ${caType} ${sshFingerprintSha256(signer.publicKeyBlob)} (using ${signatureAlgorithm[ca]})`,
    );
    expect(listing).toContain('Key ID: "req-6f1c user@example"');
    expect(listing).toContain(`Serial: ${0xfedcba9876543210n}`);
    expect(listing).toContain("Valid: from 2026-03-01T11:55:00 to 2026-03-01T20:00:00");
    expect(section(listing, "Principals")).toEqual(["0b6c5a9e-6d1e-4c1f-9a57-1f0e0d8b7c11", "team-ops"]);
    expect(section(listing, "Critical Options")).toEqual([
      "force-command /bin/echo hello",
      "source-address 10.0.0.0/8,192.168.1.1/32",
    ]);
    // ssh-keygen shows values it does not know as hex of the data: a string-wrapped "alice".
    expect(section(listing, "Extensions")).toEqual([
      "login@example.com UNKNOWN OPTION: 00000005616c696365 (len 9)",
      "permit-X11-forwarding",
      "permit-agent-forwarding",
      "permit-port-forwarding",
      "permit-pty",
      "permit-user-rc",
    ]);
  });
});

describe.each(caSpecs.map((spec) => describeKeySpec(spec)))("a %s CA", (ca) => {
  it("makes a host certificate that ssh-keygen -L lists", async () => {
    const key = userKeys.get("ed25519")!;
    const line = signers.get(ca)!.sign(
      params(key, {
        type: "host",
        principals: ["3f1d2c4b-target"],
        criticalOptions: {},
        extensions: {},
        comment: "",
      }),
    );
    expect(line.split(" ")).toHaveLength(2);
    const listing = await keygenList(line);
    expect(listing).toContain("Type: ssh-ed25519-cert-v01@openssh.com host certificate");
    expect(section(listing, "Principals")).toEqual(["3f1d2c4b-target"]);
    expect(listing).toMatch(/Critical Options: \(none\)/);
    expect(listing).toMatch(/Extensions: \(none\)/);
  });

  it("exposes its public key line, which ssh-keygen fingerprints the same", async () => {
    const signer = signers.get(ca)!;
    const file = join(dir, `${ca}-ca.pub`);
    await writeFile(file, `${signer.publicKeyLine}\n`);
    const { stdout } = await run("ssh-keygen", ["-l", "-E", "sha256", "-f", file]);
    expect(stdout.split(" ")[1]).toBe(sshFingerprintSha256(signer.publicKeyBlob));
    expect(signer.publicKeyLine).toBe(sshPublicKeyLine(caKeys.get(ca)!.publicKeySpkiDer));
  });
});

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
}

/** The indented lines under a heading of `ssh-keygen -L`. */
function section(listing: string, heading: string): string[] {
  const lines = listing.split("\n");
  const start = lines.findIndex((l) => l.trim() === `${heading}:`);
  if (start === -1) return [];
  const out: string[] = [];
  for (const l of lines.slice(start + 1)) {
    if (!l.startsWith("                ")) break;
    out.push(l.trim());
  }
  return out;
}

/** Decodes a certificate line field by field (PROTOCOL.certkeys), for checks ssh-keygen cannot show. */
function decode(line: string) {
  const blob = decodeBase64Lenient(line.split(" ")[1]!)!;
  const r = new SshReader(blob);
  const type = r.text();
  const nonce = r.string();
  // Skip the key fields by reading the same number of strings as the plain key has.
  const keyFieldCount = type.startsWith("ssh-ed25519") ? 1 : 2;
  for (let i = 0; i < keyFieldCount; i++) r.string();
  const serial = r.uint64();
  const certType = r.uint32();
  const keyId = r.text();
  const principals = list(r.string()).map(fromUtf8);
  const after = r.uint64();
  const before = r.uint64();
  const criticalOptions = pairs(r.string());
  const extensions = pairs(r.string());
  const reserved = r.string();
  const signatureKey = r.string();
  const signed = blob.subarray(0, blob.length - r.remaining);
  const signature = new SshReader(r.string());
  const rest = r.remaining;
  return {
    type,
    nonce,
    serial,
    certType,
    keyId,
    principals,
    after,
    before,
    criticalOptions,
    extensions,
    reserved,
    signatureKey,
    signed,
    signatureAlgorithm: signature.text(),
    signatureBytes: signature.string(),
    rest,
  };
}

function list(bytes: Uint8Array): Uint8Array[] {
  const r = new SshReader(bytes);
  const out: Uint8Array[] = [];
  while (r.remaining > 0) out.push(r.string());
  return out;
}

function pairs(bytes: Uint8Array): [string, Uint8Array][] {
  const items = list(bytes);
  const out: [string, Uint8Array][] = [];
  for (let i = 0; i < items.length; i += 2) out.push([fromUtf8(items[i]!), items[i + 1]!]);
  return out;
}

describe("encoding details", () => {
  it("sorts options by name, string-wraps values, and writes flag extensions as empty data", () => {
    const cert = decode(
      signers.get("ed25519")!.sign(
        params(userKeys.get("ed25519")!, {
          criticalOptions: { "source-address": "10.0.0.1/32", "force-command": "true" },
          extensions: { "permit-pty": "", "b@example.com": "x", "a@example.com": "" },
        }),
      ),
    );
    expect(cert.criticalOptions.map(([name]) => name)).toEqual(["force-command", "source-address"]);
    expect(new SshReader(cert.criticalOptions[0]![1]).text()).toBe("true");
    expect(cert.extensions.map(([name]) => name)).toEqual(["a@example.com", "b@example.com", "permit-pty"]);
    expect(cert.extensions[0]![1]).toHaveLength(0);
    expect(cert.extensions[1]![1]).toEqual(new Uint8Array([0, 0, 0, 1, 0x78]));
    expect(cert.extensions[2]![1]).toHaveLength(0);
  });

  it("writes the fields in order with whole seconds, the nonce given, and nothing after the signature", () => {
    const nonce = new Uint8Array(32).fill(7);
    const signer = signers.get("ecdsa-P-384")!;
    const cert = decode(signer.sign(params(userKeys.get("rsa-2048")!, { nonce, type: "host", serial: 0n })));
    expect(cert).toMatchObject({
      type: "ssh-rsa-cert-v01@openssh.com",
      nonce,
      serial: 0n,
      certType: 2,
      keyId: "req-6f1c user@example",
      principals: ["0b6c5a9e-6d1e-4c1f-9a57-1f0e0d8b7c11", "team-ops"],
      after: BigInt(Math.floor(validAfter.getTime() / 1000)),
      before: BigInt(validBefore.getTime() / 1000),
      reserved: new Uint8Array(0),
      signatureKey: signer.publicKeyBlob,
      signatureAlgorithm: "ecdsa-sha2-nistp384",
      rest: 0,
    });
  });

  it.each(caSpecs.map((spec) => describeKeySpec(spec)))(
    "signs with %s so that node:crypto verifies it",
    (ca) => {
      const cert = decode(signers.get(ca)!.sign(params(userKeys.get("ecdsa-P-256")!)));
      const key = createPublicKey({
        key: Buffer.from(caKeys.get(ca)!.publicKeySpkiDer),
        format: "der",
        type: "spki",
      });
      expect(cert.signatureAlgorithm).toBe(signatureAlgorithm[ca]);
      let ok: boolean;
      if (ca === "ed25519") {
        ok = verify(null, cert.signed, key, cert.signatureBytes);
      } else if (ca.startsWith("rsa")) {
        ok = verify("sha512", cert.signed, key, cert.signatureBytes);
      } else {
        // SSH ECDSA signatures are mpint r, mpint s; node verifies the IEEE P1363 form r || s.
        const size = { "ecdsa-P-256": 32, "ecdsa-P-384": 48, "ecdsa-P-521": 66 }[ca]!;
        const rs = new SshReader(cert.signatureBytes);
        const pad = (b: Uint8Array) => {
          const out = new Uint8Array(size);
          const trimmed = b[0] === 0 ? b.subarray(1) : b;
          out.set(trimmed, size - trimmed.length);
          return out;
        };
        const p1363 = new Uint8Array([...pad(rs.string()), ...pad(rs.string())]);
        const hash = { "ecdsa-P-256": "sha256", "ecdsa-P-384": "sha384", "ecdsa-P-521": "sha512" }[ca]!;
        ok = verify(hash, cert.signed, { key, dsaEncoding: "ieee-p1363" }, p1363);
        expect(rs.remaining).toBe(0);
      }
      expect(ok).toBe(true);
    },
  );

  it("is refused by ssh-keygen once a signed byte changes", async () => {
    const line = signers.get("rsa-2048")!.sign(params(userKeys.get("ed25519")!));
    const blob = decodeBase64Lenient(line.split(" ")[1]!)!;
    // The serial sits right after type, nonce and the 32-byte key; flip its last byte.
    const serialEnd = 4 + 32 + 4 + 32 + 4 + 32 + 8;
    blob[serialEnd - 1] = blob[serialEnd - 1]! ^ 1;
    const tampered = `${line.split(" ")[0]} ${Buffer.from(blob).toString("base64")}`;
    await expect(keygenList(tampered)).rejects.toThrow();
  });

  it("gives the same certificate through signSshCertificate for a deterministic Ed25519 CA", () => {
    const nonce = new Uint8Array(16).fill(1);
    const p = params(userKeys.get("ed25519")!, { nonce });
    const key = caKeys.get("ed25519")!;
    expect(signSshCertificate({ ...p, caPrivateKeyPkcs8Der: key.privateKeyPkcs8Der, caSpec: key.spec })).toBe(
      signers.get("ed25519")!.sign(p),
    );
  });

  it.each(caSpecs.map((spec) => describeKeySpec(spec)).filter((ca) => !ca.startsWith("ecdsa")))(
    "signs off the event loop with %s to the very certificate it signs in place",
    async (ca) => {
      // Ed25519 and RSA PKCS#1 v1.5 are deterministic: with the nonce fixed, both lines are one.
      const p = params(userKeys.get("ed25519")!, { nonce: new Uint8Array(16).fill(2) });
      expect(await signers.get(ca)!.signAsync(p)).toBe(signers.get(ca)!.sign(p));
    },
  );

  it("signs many certificates off the event loop at once without mixing their fields", async () => {
    // The encoder is shared between calls: certificates in flight together must each keep theirs.
    const signer = signers.get("ecdsa-P-256")!;
    const subjects = Array.from({ length: 24 }, (_, i) => ({
      key: userKeys.get(userKeySpecs.map((spec) => describeKeySpec(spec))[i % userKeySpecs.length]!)!,
      keyId: `cert-${i}`,
    }));
    const lines = await Promise.all(
      subjects.map(({ key, keyId }) => signer.signAsync(params(key, { keyId, principals: [keyId] }))),
    );
    for (const [i, line] of lines.entries()) {
      const listing = await keygenList(line);
      expect(listing).toContain(`Key ID: "cert-${i}"`);
      expect(listing).toContain(subjects[i]!.key.fingerprint);
    }
  });

  it("uses a fresh random nonce per certificate when none is given", () => {
    const p = params(userKeys.get("ed25519")!);
    const a = decode(signers.get("ed25519")!.sign(p));
    const b = decode(signers.get("ed25519")!.sign(p));
    expect(a.nonce).toHaveLength(32);
    expect(a.nonce).not.toEqual(b.nonce);
  });
});

describe("refusals", () => {
  const sign = (overrides: Partial<SshCertificateParams>) =>
    signers.get("ed25519")!.sign(params(userKeys.get("ed25519")!, overrides));

  it.each<[string, Partial<SshCertificateParams>, RegExp]>([
    ["validBefore = validAfter", { validBefore: validAfter }, /validAfter must be before validBefore/],
    [
      "both in the same second",
      { validAfter: new Date("2026-03-01T12:00:00.100Z"), validBefore: new Date("2026-03-01T12:00:00.900Z") },
      /validAfter must be before/,
    ],
    ["an invalid date", { validAfter: new Date(Number.NaN) }, /valid date/],
    ["no principals", { principals: [] }, /at least one principal/],
    ["an empty principal", { principals: ["ok", ""] }, /must not be empty/],
    ["NUL in a principal", { principals: ["a\u0000b"] }, /NUL/],
    ["a lone surrogate in a key id", { keyId: "a\ud800b" }, /lone surrogates/],
    ["a negative serial", { serial: -1n }, /uint64/],
    ["a serial over 64 bits", { serial: 2n ** 64n }, /uint64/],
    ["a short nonce", { nonce: new Uint8Array(8) }, /nonce/],
    ["an empty option name", { criticalOptions: { "": "x" } }, /must not be empty/],
    ["a comment with a line break", { comment: "two\nlines" }, /line breaks/],
  ])("refuses %s", (_, overrides, message) => {
    expect(() => sign(overrides)).toThrow(message);
  });

  it("refuses a CA key that does not match its spec", () => {
    const key = caKeys.get("ecdsa-P-384")!;
    expect(() =>
      createSshCertificateSigner(key.privateKeyPkcs8Der, { type: "ecdsa", curve: "P-256" }),
    ).toThrow(/CA key is ecdsa-sha2-nistp384, but its spec says ecdsa-sha2-nistp256/);
    expect(() =>
      createSshCertificateSigner(caKeys.get("rsa-2048")!.privateKeyPkcs8Der, { type: "rsa", bits: 4096 }),
    ).toThrow(/2048 bits, but its spec says 4096/);
  });
});
