/**
 * The KRL encoder against OpenSSH's own reader: `ssh-keygen -Q` refuses exactly the listed
 * serials of the listed CA, in any order, at any size the property generates.
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { sshPublicKeyLine } from "@wap/ssh-wire";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SshReader } from "../../lib/ssh-wire.js";
import { generateKeyPair } from "../generate-key.js";
import {
  createSshCertificateSigner,
  type SshCertificateSigner,
  standardUserExtensions,
} from "./certificate.js";
import { encodeKrl } from "./krl.js";
import { parseSshPublicKey } from "./parse-public-key.js";

const run = promisify(execFile);
let dir: string;
let ca: SshCertificateSigner;
let otherCa: SshCertificateSigner;
let subject: ReturnType<typeof parseSshPublicKey>;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "wap-krl-"));
  const [caKey, otherKey, userKey] = await Promise.all([
    generateKeyPair({ type: "ed25519" }),
    generateKeyPair({ type: "ecdsa", curve: "P-256" }),
    generateKeyPair({ type: "ed25519" }),
  ]);
  ca = createSshCertificateSigner(caKey.privateKeyPkcs8Der, caKey.spec);
  otherCa = createSshCertificateSigner(otherKey.privateKeyPkcs8Der, otherKey.spec);
  subject = parseSshPublicKey(sshPublicKeyLine(userKey.publicKeySpkiDer, "u@h"));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

async function certFile(signer: SshCertificateSigner, serial: bigint): Promise<string> {
  const line = signer.sign({
    publicKey: subject,
    type: "user",
    serial,
    keyId: `k${serial}`,
    principals: ["p"],
    validAfter: new Date(Date.now() - 60_000),
    validBefore: new Date(Date.now() + 3_600_000),
    criticalOptions: {},
    extensions: standardUserExtensions,
  });
  const file = join(dir, `c-${serial}-${Math.random().toString(36).slice(2)}-cert.pub`);
  await writeFile(file, `${line}\n`);
  return file;
}

/** True when `ssh-keygen -Q` says the certificate is revoked by the KRL. */
async function revoked(krl: Uint8Array, cert: string): Promise<boolean> {
  const file = join(dir, `krl-${Math.random().toString(36).slice(2)}`);
  await writeFile(file, krl);
  const result = await run("ssh-keygen", ["-Q", "-f", file, cert]).then(
    (r) => ({ code: 0, out: r.stdout }),
    (e: { code: number; stdout: string }) => ({ code: e.code, out: e.stdout }),
  );
  if (result.code !== 0 && !/REVOKED/.test(result.out))
    throw new Error(`ssh-keygen -Q failed: ${result.out}`);
  return /REVOKED/.test(result.out);
}

describe("encodeKrl", () => {
  it("writes the header PROTOCOL.krl describes", () => {
    const krl = encodeKrl({ version: 7n, generatedAt: new Date(1_700_000_000_000), certificates: [] });
    const r = new SshReader(krl);
    expect(r.uint64()).toBe(0x5353484b524c0a00n);
    expect(r.uint32()).toBe(1);
    expect(r.uint64()).toBe(7n);
    expect(r.uint64()).toBe(1_700_000_000n);
    expect(r.uint64()).toBe(0n);
    expect(r.string()).toHaveLength(0);
    expect(r.string()).toHaveLength(0);
    expect(r.remaining).toBe(0);
  });

  it("ssh-keygen -Q refuses the listed serials of that CA and accepts the others", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.bigInt({ min: 1n, max: 0xffffffffffffffffn }), { minLength: 2, maxLength: 40 }),
        async (serials) => {
          const [kept, ...listed] = serials as [bigint, ...bigint[]];
          const krl = encodeKrl({
            version: 1n,
            generatedAt: new Date(),
            certificates: [{ caKeyBlob: ca.publicKeyBlob, serials: [...listed].reverse() }],
          });
          expect(await revoked(krl, await certFile(ca, listed[0]!))).toBe(true);
          expect(await revoked(krl, await certFile(ca, kept))).toBe(false);
          // The same serial from another CA is not revoked.
          expect(await revoked(krl, await certFile(otherCa, listed[0]!))).toBe(false);
        },
      ),
      { numRuns: 8 },
    );
  });

  it("lists several CA keys (both keys of a rotation) in one file", async () => {
    const krl = encodeKrl({
      version: 2n,
      generatedAt: new Date(),
      certificates: [
        { caKeyBlob: ca.publicKeyBlob, serials: [5n, 5n, 0xffffffffffffffffn] },
        { caKeyBlob: otherCa.publicKeyBlob, serials: [6n] },
      ],
    });
    expect(await revoked(krl, await certFile(ca, 5n))).toBe(true);
    expect(await revoked(krl, await certFile(ca, 0xffffffffffffffffn))).toBe(true);
    expect(await revoked(krl, await certFile(otherCa, 6n))).toBe(true);
    expect(await revoked(krl, await certFile(otherCa, 5n))).toBe(false);
  });
});
