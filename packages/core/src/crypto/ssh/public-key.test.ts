import { execFile } from "node:child_process";
import { createPublicKey } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import {
  opensshPrivateKey,
  sshFingerprintSha256,
  sshKeyAlgorithmOf,
  sshPublicKeyBlob,
  sshPublicKeyLine,
} from "@wap/ssh-wire";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fromPem } from "../../lib/pem.js";
import { SshReader } from "../../lib/ssh-wire.js";
import { type GeneratedKey, generateKeyPair } from "../generate-key.js";
import { allCaKeySpecs, describeKeySpec, keyBitsOf } from "../key-types.js";

const run = promisify(execFile);
const sshKeygen = "/usr/bin/ssh-keygen";

let dir: string;
const keys = new Map<string, GeneratedKey>();

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "wap-ssh-key-"));
  const generated = await Promise.all(allCaKeySpecs.map((spec) => generateKeyPair(spec)));
  for (const key of generated) keys.set(describeKeySpec(key.spec), key);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const expectedAlgorithm = {
  ed25519: "ssh-ed25519",
  "ecdsa-P-256": "ecdsa-sha2-nistp256",
  "ecdsa-P-384": "ecdsa-sha2-nistp384",
  "ecdsa-P-521": "ecdsa-sha2-nistp521",
  "rsa-2048": "ssh-rsa",
  "rsa-3072": "ssh-rsa",
  "rsa-4096": "ssh-rsa",
} as const;

const keygenType = { ed25519: "ED25519", ecdsa: "ECDSA", rsa: "RSA" } as const;

describe.each(allCaKeySpecs.map((spec) => [describeKeySpec(spec), spec] as const))("%s", (name, spec) => {
  const key = () => keys.get(name)!;

  it("writes a public key line ssh-keygen reads with the same fingerprint and size", async () => {
    const line = sshPublicKeyLine(key().publicKeySpkiDer, "wap-test@example");
    expect(line.startsWith(`${expectedAlgorithm[name as keyof typeof expectedAlgorithm]} AAAA`)).toBe(true);
    expect(line.endsWith(" wap-test@example")).toBe(true);
    const file = join(dir, `${name}.pub`);
    await writeFile(file, `${line}\n`);

    const { stdout } = await run(sshKeygen, ["-l", "-E", "sha256", "-f", file]);
    const fingerprint = sshFingerprintSha256(sshPublicKeyBlob(key().publicKeySpkiDer));
    expect(stdout.trim()).toBe(
      `${keyBitsOf(spec)} ${fingerprint} wap-test@example (${keygenType[spec.type]})`,
    );
  });

  // OpenSSH 9.2 cannot export Ed25519 as PKCS#8 ("do_convert_to_pkcs8: unsupported key type"),
  // so Ed25519 is compared through the RFC 4716 export instead.
  if (spec.type !== "ed25519")
    it("round-trips through ssh-keygen's PKCS#8 export to the same SPKI", async () => {
      const file = join(dir, `${name}-export.pub`);
      await writeFile(file, `${sshPublicKeyLine(key().publicKeySpkiDer)}\n`);
      const { stdout } = await run(sshKeygen, ["-e", "-m", "PKCS8", "-f", file]);
      const spki = fromPem("PUBLIC KEY", stdout);
      expect(spki).toBeDefined();
      // Compare as key objects: ssh-keygen may pick another (equivalent) DER encoding of EC parameters.
      const ours = createPublicKey({ key: Buffer.from(key().publicKeySpkiDer), format: "der", type: "spki" });
      const theirs = createPublicKey({ key: Buffer.from(spki!), format: "der", type: "spki" });
      expect(theirs.equals(ours)).toBe(true);
    });

  if (spec.type === "ed25519")
    it("round-trips through ssh-keygen's RFC 4716 export to the same key", async () => {
      const file = join(dir, `${name}-rfc4716.pub`);
      await writeFile(file, `${sshPublicKeyLine(key().publicKeySpkiDer)}\n`);
      const { stdout } = await run(sshKeygen, ["-e", "-m", "RFC4716", "-f", file]);
      const body = stdout
        .split("\n")
        .filter((l) => !l.startsWith("----") && !l.includes(":") && l.trim() !== "")
        .join("");
      const blob = new SshReader(new Uint8Array(Buffer.from(body, "base64")));
      expect(blob.text()).toBe("ssh-ed25519");
      // An Ed25519 SPKI is a fixed 12-byte header followed by the 32-byte public key.
      expect(blob.string()).toEqual(key().publicKeySpkiDer.subarray(12));
    });

  it("writes an openssh-key-v1 private key that ssh-keygen loads and derives the same public key from", async () => {
    const pem = opensshPrivateKey(key().privateKeyPkcs8Der, "host@example");
    expect(pem.startsWith("-----BEGIN OPENSSH PRIVATE KEY-----\n")).toBe(true);
    const file = join(dir, `${name}-private`);
    await writeFile(file, pem, { mode: 0o600 });

    const { stdout } = await run(sshKeygen, ["-y", "-f", file]);
    const [algorithm, blob] = stdout.trim().split(" ");
    const [ourAlgorithm, ourBlob] = sshPublicKeyLine(key().publicKeySpkiDer).split(" ");
    expect(algorithm).toBe(ourAlgorithm);
    expect(blob).toBe(ourBlob);
  });

  it("derives the same blob from the private key object as from the SPKI", () => {
    const fromSpki = sshPublicKeyBlob(key().publicKeySpkiDer);
    const publicKey = createPublicKey({
      key: Buffer.from(key().publicKeySpkiDer),
      format: "der",
      type: "spki",
    });
    expect(sshPublicKeyBlob(publicKey)).toEqual(fromSpki);
    expect(sshKeyAlgorithmOf(publicKey)).toBe(expectedAlgorithm[name as keyof typeof expectedAlgorithm]);
    // The blob's first field names the algorithm.
    expect(new SshReader(fromSpki).text()).toBe(expectedAlgorithm[name as keyof typeof expectedAlgorithm]);
  });
});

describe("opensshPrivateKey", () => {
  it("is deterministic and pads the private section to 8 bytes", () => {
    const key = keys.get("ed25519")!;
    const a = opensshPrivateKey(key.privateKeyPkcs8Der);
    expect(opensshPrivateKey(key.privateKeyPkcs8Der)).toBe(a);
    const body = fromPem("OPENSSH PRIVATE KEY", a)!;
    const reader = new SshReader(body);
    expect(new TextDecoder().decode(reader.raw(15))).toBe("openssh-key-v1\0");
    expect(reader.text()).toBe("none");
    expect(reader.text()).toBe("none");
    expect(reader.string().length).toBe(0);
    expect(reader.uint32()).toBe(1);
    reader.string();
    const section = reader.string();
    expect(section.length % 8).toBe(0);
    expect(reader.remaining).toBe(0);
    const inner = new SshReader(section);
    expect(inner.uint32()).toBe(inner.uint32());
  });

  it("rejects a comment with a line break", () => {
    const key = keys.get("ed25519")!;
    expect(() => opensshPrivateKey(key.privateKeyPkcs8Der, "a\nb")).toThrow(TypeError);
    expect(() => sshPublicKeyLine(key.publicKeySpkiDer, "a\nb")).toThrow(TypeError);
  });
});

describe("sshFingerprintSha256", () => {
  it("has no base64 padding", () => {
    const fp = sshFingerprintSha256(new Uint8Array([1, 2, 3]));
    expect(fp).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
  });
});
