/**
 * OpenSSH certificates from our encoder against a real OpenSSH sshd and ssh client: user logins
 * for every CA x user key combination, critical options, refusals, and host certificates through
 * an @cert-authority known_hosts line. Never skipped: if sshd cannot run, these tests fail.
 */
import { randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { opensshPrivateKey, sshPublicKeyLine } from "@wap/ssh-wire";
import { type RunningSshd, startSshd } from "@wap/test-kit/sshd";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GeneratedKey, generateKeyPair } from "../src/crypto/generate-key.js";
import { type CaKeySpec, describeKeySpec } from "../src/crypto/key-types.js";
import {
  createSshCertificateSigner,
  type SshCertificateParams,
  type SshCertificateSigner,
  standardUserExtensions,
} from "../src/crypto/ssh/certificate.js";
import { type ParsedSshPublicKey, parseSshPublicKey } from "../src/crypto/ssh/parse-public-key.js";
import { sshCaKeySpecs, sshSubjectKeySpecs } from "./support/key-specs.js";

const caSpecs = sshCaKeySpecs;
const userKeySpecs = sshSubjectKeySpecs;

interface UserKey {
  readonly parsed: ParsedSshPublicKey;
  readonly identityFile: string;
}

let dir: string;
const signers = new Map<string, SshCertificateSigner>();
const userKeys = new Map<string, UserKey>();
const subjectId = randomUUID();
let serial = 1000n;
let fileCounter = 0;

async function writeUserKey(key: GeneratedKey, name: string): Promise<UserKey> {
  const identityFile = join(dir, `${name}-key`);
  await writeFile(identityFile, opensshPrivateKey(key.privateKeyPkcs8Der), { mode: 0o600 });
  return {
    parsed: parseSshPublicKey(`${sshPublicKeyLine(key.publicKeySpkiDer, `${name}@platform`)}\n`),
    identityFile,
  };
}

/** Signs a user certificate valid from 5 minutes ago for an hour, and writes it next to nothing else. */
async function userCertificate(
  ca: string,
  key: UserKey,
  overrides: Partial<SshCertificateParams> = {},
): Promise<string> {
  const now = Date.now();
  const line = signers.get(ca)!.sign({
    publicKey: key.parsed,
    type: "user",
    serial: serial++,
    keyId: `test-${serial}`,
    principals: [subjectId],
    validAfter: new Date(now - 5 * 60_000),
    validBefore: new Date(now + 3600_000),
    criticalOptions: {},
    extensions: standardUserExtensions,
    ...overrides,
  });
  const file = join(dir, `cert-${++fileCounter}-cert.pub`);
  await writeFile(file, `${line}\n`);
  return file;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "wap-sshd-test-"));
  const [cas, users] = await Promise.all([
    Promise.all(caSpecs.map((spec) => generateKeyPair(spec))),
    Promise.all(userKeySpecs.map((spec) => generateKeyPair(spec))),
  ]);
  for (const key of cas) {
    signers.set(describeKeySpec(key.spec), createSshCertificateSigner(key.privateKeyPkcs8Der, key.spec));
  }
  for (const key of users) {
    const name = describeKeySpec(key.spec);
    userKeys.set(name, await writeUserKey(key, name));
  }
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("user certificates against a real sshd", () => {
  let sshd: RunningSshd;

  beforeAll(async () => {
    sshd = await startSshd({
      trustedUserCaKeys: [...signers.values()].map((s) => s.publicKeyLine),
      principalsForUser: { [userInfo().username]: [subjectId] },
    });
  });

  afterAll(async () => {
    await sshd?.stop();
  });

  const login = async (certificateFile: string, key = userKeys.get("ed25519")!, command = "echo ok") =>
    sshd.ssh({ identityFile: key.identityFile, certificateFile, command });

  const combinations = caSpecs.flatMap((ca) =>
    userKeySpecs.map((user) => [describeKeySpec(ca), describeKeySpec(user)] as const),
  );

  // Concurrent (vitest runs 5 at a time): each login is a full handshake, ~0.4 s on these machines.
  it.concurrent.for(combinations)(
    "logs in with a user certificate from a %s CA for a %s key",
    async ([ca, user], { expect }) => {
      const key = userKeys.get(user)!;
      const result = await login(await userCertificate(ca, key), key);
      expect(result, sshd.logs()).toMatchObject({ code: 0, stdout: "ok\n" });
    },
  );

  it("honours force-command", async () => {
    const cert = await userCertificate("ed25519", userKeys.get("ed25519")!, {
      criticalOptions: { "force-command": "echo forced" },
    });
    expect(await login(cert)).toMatchObject({ code: 0, stdout: "forced\n" });
  });

  it("accepts both critical options together when the source address matches (sorted encoding)", async () => {
    const cert = await userCertificate("rsa-2048", userKeys.get("ed25519")!, {
      criticalOptions: { "source-address": "127.0.0.1/32,::1/128", "force-command": "echo both" },
    });
    expect(await login(cert)).toMatchObject({ code: 0, stdout: "both\n" });
  });

  it("refuses a certificate whose source-address does not match", async () => {
    const cert = await userCertificate("ed25519", userKeys.get("ed25519")!, {
      criticalOptions: { "source-address": "10.9.9.9/32" },
    });
    const result = await login(cert);
    expect(result.code).toBe(255);
    expect(result.stdout).toBe("");
    expect(result.stderr).toMatch(/Permission denied \(publickey\)/);
    expect(sshd.logs()).toMatch(/not from a permitted source address/);
  });

  it("refuses an expired certificate", async () => {
    const now = Date.now();
    const cert = await userCertificate("ed25519", userKeys.get("ed25519")!, {
      validAfter: new Date(now - 2 * 3600_000),
      validBefore: new Date(now - 3600_000),
    });
    const result = await login(cert);
    expect(result.code).toBe(255);
    expect(result.stderr).toMatch(/Permission denied \(publickey\)/);
    expect(sshd.logs()).toMatch(/Certificate invalid: expired/);
  });

  it("refuses a certificate that is not valid yet", async () => {
    const now = Date.now();
    const cert = await userCertificate("ecdsa-P-256", userKeys.get("ed25519")!, {
      validAfter: new Date(now + 3600_000),
      validBefore: new Date(now + 2 * 3600_000),
    });
    const result = await login(cert);
    expect(result.code).toBe(255);
    expect(sshd.logs()).toMatch(/Certificate invalid: not yet valid/);
  });

  it("refuses a certificate for another principal", async () => {
    const cert = await userCertificate("ed25519", userKeys.get("ed25519")!, { principals: [randomUUID()] });
    const result = await login(cert);
    expect(result.code).toBe(255);
    expect(result.stderr).toMatch(/Permission denied \(publickey\)/);
  });

  it("refuses a host certificate presented as a user certificate", async () => {
    const cert = await userCertificate("ed25519", userKeys.get("ed25519")!, { type: "host" });
    expect((await login(cert)).code).toBe(255);
  });

  it("refuses a certificate from a CA it does not trust", async () => {
    const other = await generateKeyPair({ type: "ed25519" });
    signers.set("untrusted", createSshCertificateSigner(other.privateKeyPkcs8Der, other.spec));
    const cert = await userCertificate("untrusted", userKeys.get("ed25519")!);
    expect((await login(cert)).code).toBe(255);
  });
});

describe.each([
  { type: "ed25519" },
  { type: "ecdsa", curve: "P-256" },
  { type: "rsa", bits: 2048 },
] satisfies CaKeySpec[])("a host certificate from a $type CA", (spec) => {
  const targetId = randomUUID();
  let sshd: RunningSshd;
  let signer: SshCertificateSigner;
  let userCert: string;

  beforeAll(async () => {
    const caKey = await generateKeyPair(spec);
    signer = createSshCertificateSigner(caKey.privateKeyPkcs8Der, spec);
    signers.set(`host-${describeKeySpec(spec)}`, signer);
    const hostKey = await generateKeyPair({ type: "ed25519" });
    const now = Date.now();
    const hostCertificate = signer.sign({
      publicKey: parseSshPublicKey(sshPublicKeyLine(hostKey.publicKeySpkiDer)),
      type: "host",
      serial: 7n,
      keyId: `host-${targetId}`,
      principals: [targetId],
      validAfter: new Date(now - 5 * 60_000),
      validBefore: new Date(now + 14 * 86400_000),
      criticalOptions: {},
      extensions: {},
    });
    // As the daemon does: the CA that signs the host certificate is the one trusted for users.
    sshd = await startSshd({
      trustedUserCaKeys: [signer.publicKeyLine],
      principalsForUser: { [userInfo().username]: [subjectId] },
      hostKeyPkcs8: hostKey.privateKeyPkcs8Der,
      hostCertificate,
    });
    userCert = await userCertificate(`host-${describeKeySpec(spec)}`, userKeys.get("ed25519")!);
  });

  afterAll(async () => {
    await sshd?.stop();
  });

  const connect = (knownHostsLine: string, hostKeyAlias = targetId) =>
    sshd.ssh({
      identityFile: userKeys.get("ed25519")!.identityFile,
      certificateFile: userCert,
      knownHostsLine,
      hostKeyAlias,
      command: "echo ok",
    });

  it("is accepted through an @cert-authority line with StrictHostKeyChecking=yes", async () => {
    const result = await connect(`@cert-authority * ${signer.publicKeyLine}`);
    expect(result, `${result.stderr}\n${sshd.logs()}`).toMatchObject({ code: 0, stdout: "ok\n" });
  });

  it("is refused when known_hosts trusts another CA", async () => {
    const other = await generateKeyPair({ type: "ed25519" });
    const line = createSshCertificateSigner(other.privateKeyPkcs8Der, other.spec).publicKeyLine;
    const result = await connect(`@cert-authority * ${line}`);
    expect(result.code).toBe(255);
    expect(result.stderr).toMatch(/Host key verification failed/);
  });

  it("is refused for a host name that is not its principal", async () => {
    const result = await connect(`@cert-authority * ${signer.publicKeyLine}`, randomUUID());
    expect(result.code).toBe(255);
    expect(result.stderr).toMatch(/not a listed principal|Host key verification failed/);
  });
});
