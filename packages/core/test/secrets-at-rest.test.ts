/**
 * CA private keys (and the workspaces' audit keys, and webhook signing secrets) are sealed under the master key: a dump of the whole SQLite database (main
 * file, WAL and shared memory, while open and after close) holds none of them in plaintext, in
 * any encoding, after authorities of every type were created, used and rolled over.
 */
import { createPrivateKey } from "node:crypto";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  AuthorityType,
  CertificateService,
  SignSSHCertificateRequest_CertificateType as CertType,
  UtilService,
  WebhookService,
} from "@wap/api";
import { createSqliteStorage } from "@wap/storage-sqlite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { caKeyContext } from "../src/certificates/key-storage.js";
import { createMasterKeyStore, generateMasterKey } from "../src/crypto/key-store.js";
import type { CaKeySpec } from "../src/crypto/key-types.js";
import type { Storage } from "../src/storage/storage.js";
import { createAuthority, subjectKey } from "./support/certificates.js";
import { createTestPlatform, type TestPlatform } from "./support.js";

let dir: string;
let filename: string;
let storage: Storage;
let t: TestPlatform;
let workspaceId: string;
const keyStore = createMasterKeyStore({ masterKey: generateMasterKey() });
/** Every private key the platform holds, opened, as PKCS#8 DER. */
const plaintextKeys: Uint8Array[] = [];
/** The webhook signing secrets the platform answered, as bytes. */
const webhookSecrets: Buffer[] = [];

const specs: readonly CaKeySpec[] = [
  { type: "ed25519" },
  { type: "ecdsa", curve: "P-384" },
  { type: "rsa", bits: 2048 },
];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "wap-secrets-"));
  filename = join(dir, "wap.db");
  storage = await createSqliteStorage({ filename, strictTransactions: true });
  t = await createTestPlatform({ storage, keyStore });
  const ada = await t.owner();
  workspaceId = ada.workspaceId;
  const key = (await subjectKey({ type: "ed25519" })).line;
  for (const authorityType of [AuthorityType.SSH, AuthorityType.X509]) {
    for (const spec of specs) {
      const ca = await createAuthority(t, ada, spec, { authorityType });
      if (authorityType === AuthorityType.SSH) {
        await t.call(ada.caller, CertificateService.method.signSSHCertificate, {
          workspaceId,
          caId: ca.id,
          type: CertType.USER,
          publicKey: key,
        });
      }
      await t.call(ada.caller, CertificateService.method.rolloverCertificateAuthority, {
        workspaceId,
        id: ca.id,
      });
    }
  }
  for (const ca of await storage.certificateAuthorities.list(workspaceId)) {
    plaintextKeys.push(await keyStore.open(ca.sealedPrivateKey, caKeyContext(ca.id, ca.keyVersion)));
  }
  // The workspace's audit key, made and used by a chain export (which signs a checkpoint).
  await t.call(ada.caller, UtilService.method.exportAuditChain, { workspaceId });
  const auditKey = await storage.auditCheckpoints.findKey(workspaceId);
  plaintextKeys.push(await keyStore.open(auditKey!.sealedPrivateKey, `audit-key:${workspaceId}`));
  // A webhook endpoint (disabled: nothing is sent) and its rotated secret: both sealed.
  const hook = await t.call(ada.caller, WebhookService.method.createWebhookEndpoint, {
    workspaceId,
    url: "https://192.0.2.1/hooks",
    disabled: true,
  });
  const rotated = await t.call(ada.caller, WebhookService.method.rotateWebhookSecret, {
    workspaceId,
    id: hook.endpoint!.id,
  });
  for (const secret of [hook.secret!, rotated.secret!]) {
    webhookSecrets.push(Buffer.from(secret.slice("whsec_".length), "base64"));
  }
  for (const name of ["access-token-signing-key", "service-account-token-signing-key"]) {
    const signing = await storage.secrets.find(name);
    plaintextKeys.push(await keyStore.open(signing!.sealed, `secret:${name}`));
  }
}, 60_000);

afterAll(async () => {
  await t?.platform.close();
  await rm(dir, { recursive: true, force: true });
});

/** Every file of the database: main file, -wal, -shm. */
async function dump(): Promise<Buffer> {
  const names = (await readdir(dir)).filter((n) => n.startsWith("wap.db"));
  return Buffer.concat(await Promise.all(names.map((n) => readFile(join(dir, n)))));
}

/** The secret values of a private key (JWK d, and p and q for RSA): the public half may be stored. */
function secretParts(pkcs8: Uint8Array): Buffer[] {
  const jwk = createPrivateKey({ key: Buffer.from(pkcs8), format: "der", type: "pkcs8" }).export({
    format: "jwk",
  });
  return [jwk.d, jwk.p, jwk.q]
    .filter((v): v is string => typeof v === "string")
    .map((v) => Buffer.from(v, "base64url"));
}

/** Base64 of `bytes` as it would read inside a longer encoding, at each of the three alignments. */
function base64Forms(bytes: Buffer): string[] {
  return [0, 1, 2].map((shift) => bytes.subarray(shift).toString("base64").slice(4, 36));
}

/** What any plaintext private key would show: DER, its secrets raw, in base64 or hex, PEM and OpenSSH markers. */
function leaks(bytes: Buffer): string[] {
  const found: string[] = [];
  const text = bytes.toString("latin1");
  const lower = text.toLowerCase();
  for (const marker of ["PRIVATE KEY", "openssh-key-v1", "BEGIN RSA", "BEGIN EC"]) {
    if (text.includes(marker)) found.push(`marker ${marker}`);
  }
  // PKCS#8 headers: Ed25519, and the version-and-algorithm start of RSA and EC keys.
  for (const hex of [
    "302e020100300506032b6570",
    "020100300d06092a864886f70d0101010500",
    "020100301006072a8648ce3d0201",
  ]) {
    if (bytes.includes(Buffer.from(hex, "hex"))) found.push(`PKCS#8 header ${hex}`);
  }
  plaintextKeys.forEach((key, i) => {
    if (bytes.includes(Buffer.from(key))) found.push(`key ${i} DER`);
    for (const secret of secretParts(key)) {
      if (bytes.includes(secret.subarray(0, 16))) found.push(`key ${i} secret bytes`);
      if (lower.includes(secret.subarray(0, 16).toString("hex"))) found.push(`key ${i} secret hex`);
      for (const form of base64Forms(secret)) {
        if (text.includes(form)) found.push(`key ${i} secret base64`);
        if (text.includes(form.replace(/\+/g, "-").replace(/\//g, "_")))
          found.push(`key ${i} secret base64url`);
      }
    }
  });
  return found;
}

describe("secrets at rest", () => {
  it("holds the webhook signing secrets sealed: not their bytes, hex, base64 or whsec_ text", async () => {
    const bytes = await dump();
    const text = bytes.toString("latin1");
    expect(webhookSecrets).toHaveLength(2);
    for (const secret of webhookSecrets) {
      expect(bytes.includes(secret.subarray(0, 16))).toBe(false);
      expect(text.toLowerCase().includes(secret.subarray(0, 16).toString("hex"))).toBe(false);
      for (const form of base64Forms(secret)) expect(text.includes(form)).toBe(false);
    }
    expect(text.includes("whsec_")).toBe(false);
  });

  it("the test itself can see a key where there is one", () => {
    // A CA key per spec and authority type, the workspace's audit key and the two token signing keys.
    expect(plaintextKeys.length).toBe(specs.length * 2 + 3);
    const planted = Buffer.concat([Buffer.from("xx"), Buffer.from(plaintextKeys[0]!), Buffer.from("yy")]);
    expect(leaks(planted).length).toBeGreaterThan(0);
    for (const key of plaintextKeys) {
      expect(leaks(Buffer.from(`x${Buffer.from(key).toString("base64")}`)).length).toBeGreaterThan(0);
      expect(leaks(Buffer.from(`xy${Buffer.from(key).toString("hex")}`)).length).toBeGreaterThan(0);
    }
  });

  it("no private key appears in the database files while open", async () => {
    expect(leaks(await dump())).toEqual([]);
  });

  it("no private key appears in the database files after close", async () => {
    await t.platform.close();
    expect(leaks(await dump())).toEqual([]);
    // The data is there: the authorities and their sealed keys were written.
    const reopened = await createSqliteStorage({ filename, strictTransactions: true });
    try {
      expect((await reopened.issuedCertificates.list(workspaceId, { limit: 10, offset: 0 })).total).toBe(
        specs.length,
      );
      expect(await reopened.certificateAuthorities.list(workspaceId)).toHaveLength(specs.length * 2);
    } finally {
      await reopened.close();
    }
  });
});
