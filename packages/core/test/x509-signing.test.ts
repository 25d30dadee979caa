/**
 * SignX509Certificate through `platform.invoke`, with CSRs made by `openssl req` and every leaf
 * checked by `openssl verify` against the returned chain: usages, the name policy, TTL rules,
 * refusals and the ledger.
 */
import { X509Certificate } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import {
  AuthorityType,
  CertificateKeyType,
  CertificateService,
  ServiceAccountService,
  SignX509CertificateRequest_X509Usage as Usage,
  UserService,
} from "@wap/api";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type CaKeySpec, describeKeySpec } from "../src/crypto/key-types.js";
import { createAuthority, duration, insertTarget, type Owner, run, scratch } from "./support/certificates.js";
import { createTestPlatform, expectCode, type TestPlatform } from "./support.js";

const keyArgs = {
  ed25519: ["-algorithm", "ED25519"],
  "ecdsa-P-256": ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"],
  "ecdsa-P-384": ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384"],
  "ecdsa-P-521": ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-521"],
  "rsa-2048": ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"],
} as const;
type LeafKey = keyof typeof keyArgs;

let files: Awaited<ReturnType<typeof scratch>>;
const keyFiles = new Map<LeafKey, Promise<string>>();

beforeAll(async () => {
  files = await scratch();
});
afterAll(() => files.remove());

function keyFile(key: LeafKey): Promise<string> {
  let file = keyFiles.get(key);
  if (file === undefined) {
    const path = join(files.dir, `leaf-${key}.key`);
    file = run("openssl", ["genpkey", ...keyArgs[key], "-out", path]).then(() => path);
    keyFiles.set(key, file);
  }
  return file;
}

let csrCounter = 0;
/** A CSR as `openssl req` makes it. */
async function csr(key: LeafKey, subj: string, sans?: string): Promise<string> {
  const out = join(files.dir, `req-${++csrCounter}.csr`);
  await run("openssl", [
    "req",
    "-new",
    "-key",
    await keyFile(key),
    "-subj",
    subj,
    ...(sans === undefined ? [] : ["-addext", `subjectAltName=${sans}`]),
    "-out",
    out,
  ]);
  return readFile(out, "utf8");
}

/** `openssl verify` of a leaf against the returned chain, at the platform's time. */
async function verify(t: TestPlatform, res: { certificate: string; caChain: string }, purpose: string) {
  const chain = await files.file("chain.pem", res.caChain);
  const leaf = await files.file("leaf.pem", res.certificate);
  const at = String(Math.floor(t.clock.now().getTime() / 1000));
  const { stdout } = await run("openssl", [
    "verify",
    "-x509_strict",
    "-attime",
    at,
    "-purpose",
    purpose,
    "-CAfile",
    chain,
    leaf,
  ]);
  return stdout;
}

async function text(pem: string): Promise<string> {
  const path = await files.file("cert.pem", pem);
  return (await run("openssl", ["x509", "-noout", "-text", "-in", path])).stdout;
}

const caSpecs: readonly CaKeySpec[] = [
  { type: "ed25519" },
  { type: "ecdsa", curve: "P-256" },
  { type: "ecdsa", curve: "P-384" },
  { type: "rsa", bits: 2048 },
];
const leafKeys = Object.keys(keyArgs) as LeafKey[];

describe("every authority x key x usage, verified by openssl", () => {
  let t: TestPlatform;
  let ada: Owner;
  const cas = new Map<string, string>();

  beforeAll(async () => {
    t = await createTestPlatform();
    ada = await t.owner();
    for (const spec of caSpecs) {
      const ca = await createAuthority(t, ada, spec, { authorityType: AuthorityType.X509 });
      cas.set(describeKeySpec(spec), ca.id);
    }
    const ssh = await createAuthority(t, ada, { type: "ed25519" }, { name: "ssh" });
    await insertTarget(t, ada.workspaceId, ssh.id, {
      name: "web-1",
      endpoints: ["10.1.2.3:4022", "web-1.example.com"],
    });
  }, 60_000);
  afterAll(() => t.platform.close());

  const cases = caSpecs.flatMap((ca) =>
    leafKeys.flatMap((key) =>
      (["client", "server", "both"] as const).map((usage) => [describeKeySpec(ca), key, usage] as const),
    ),
  );

  it.each(cases)("a %s authority signs a %s CSR for %s use", async (caName, key, usage) => {
    const request =
      usage === "client"
        ? { csr: await csr(key, `/CN=${ada.caller.userId}`), usage: Usage.CLIENT_AUTH }
        : {
            csr: await csr(key, "/CN=web-1", "DNS:web-1,DNS:web-1.example.com,IP:10.1.2.3"),
            usage: usage === "server" ? Usage.SERVER_AUTH : Usage.CLIENT_AND_SERVER,
          };
    const res = await t.call(ada.caller, CertificateService.method.signX509Certificate, {
      workspaceId: ada.workspaceId,
      caId: cas.get(caName)!,
      ...request,
    });
    expect(res.caId).toBe(cas.get(caName));
    expect(res.caChain).toMatch(/^-----BEGIN CERTIFICATE-----/);
    for (const purpose of usage === "client"
      ? ["sslclient"]
      : usage === "server"
        ? ["sslserver"]
        : ["sslclient", "sslserver"]) {
      expect(await verify(t, res, purpose)).toContain(": OK");
    }
    const printed = await text(res.certificate);
    if (usage !== "client")
      expect(printed).toMatch(/DNS:web-1, DNS:web-1\.example\.com, IP Address:10\.1\.2\.3/);
  });
});

describe("SignX509Certificate rules", () => {
  let t: TestPlatform;
  let ada: Owner;
  let caId: string;
  const sign = (request: Record<string, unknown>, caller: Parameters<TestPlatform["call"]>[0] = ada.caller) =>
    t.call(caller, CertificateService.method.signX509Certificate, {
      workspaceId: ada.workspaceId,
      caId,
      ...request,
    });

  beforeEach(async () => {
    t = await createTestPlatform();
    ada = await t.owner();
    caId = (
      await createAuthority(
        t,
        ada,
        { type: "ecdsa", curve: "P-256" },
        {
          authorityType: AuthorityType.X509,
          userDefaultTtl: duration(3600),
          userMaxTtl: duration(7200),
        },
      )
    ).id;
  });
  afterEach(() => t.platform.close());

  it("names the caller: the CN defaults to the user id; TTL default, clamp to the maximum; ledger and audit", async () => {
    const res = await sign({ csr: await csr("ed25519", "/O=Nobody") });
    expect(await text(res.certificate)).toContain(`CN = ${ada.caller.userId}`);
    expect(Number(res.expiresAt?.seconds) * 1000).toBe(t.clock.now().getTime() + 3600_000);
    const long = await sign({ csr: await csr("ed25519", "/O=Nobody"), ttl: duration(86_400) });
    expect(Number(long.expiresAt?.seconds) * 1000).toBe(t.clock.now().getTime() + 7200_000);
    const ledger = await t.storage.issuedCertificates.list(ada.workspaceId, {
      limit: 10,
      offset: 0,
      kind: "x509",
    });
    expect(ledger.total).toBe(2);
    const serial = (
      await run("openssl", ["x509", "-noout", "-serial", "-in", await files.file("l.pem", long.certificate)])
    ).stdout;
    const entry = await t.storage.issuedCertificates.findBySerial(
      ada.workspaceId,
      caId,
      serial
        .trim()
        .toLowerCase()
        .replace(/^serial=/, ""),
    );
    expect(entry).toMatchObject({
      caId,
      kind: "x509",
      principals: [ada.caller.userId],
      requesterId: ada.caller.userId,
      validBefore: new Date(t.clock.now().getTime() + 7200_000),
    });
    const audit = await t.storage.auditEvents.list(ada.workspaceId, {
      limit: 10,
      offset: 0,
      action: "certificate.sign_x509",
    });
    expect(audit.total).toBe(2);
  });

  it("a client certificate names its holder by id only: no other subject can claim it", async () => {
    const viewer = await t.signUp();
    await t.storage.members.insert({
      workspaceId: ada.workspaceId,
      userId: viewer.caller.userId,
      role: "viewer",
      createdAt: t.clock.now(),
      updatedAt: t.clock.now(),
    });
    // The viewer cannot take the owner's id as a username, in any spelling...
    for (const spelling of [
      ada.caller.userId,
      ada.caller.userId.toUpperCase(),
      ada.caller.userId.replaceAll("-", ""),
    ]) {
      const refused = await expectCode(
        t.call(viewer.caller, UserService.method.updateProfile, { username: spelling }),
        "invalid_argument",
      );
      expect(refused.message).toContain("username");
    }
    // ...nor ask for the owner's id, username or any name but their own id as the CN.
    const ownName = (await t.storage.users.findById(viewer.caller.userId))!.username;
    for (const cn of [ada.caller.userId, ownName]) {
      const refused = await expectCode(
        sign({ csr: await csr("ed25519", `/CN=${cn}`) }, viewer.caller),
        "permission_denied",
      );
      expect(refused.reason).toBe("NAME_NOT_ALLOWED");
    }
    // An empty CN or the id in capitals both give the id as it is stored.
    for (const subj of ["/O=wap", `/CN=${viewer.caller.userId.toUpperCase()}`]) {
      const res = await sign({ csr: await csr("ed25519", subj) }, viewer.caller);
      expect(new X509Certificate(res.certificate).subject).toBe(`CN=${viewer.caller.userId}`);
    }
    // A service account named after a user id cannot be created either.
    const named = await expectCode(
      t.call(ada.caller, ServiceAccountService.method.createServiceAccount, {
        workspaceId: ada.workspaceId,
        name: viewer.caller.userId,
      }),
      "invalid_argument",
    );
    expect(named.message).toContain("name");
  });

  it("signs with the workspace's default X.509 authority when caId is left out", async () => {
    const res = await sign({ caId: undefined, csr: await csr("ed25519", `/CN=${ada.caller.userId}`) });
    expect(res.caId).toBe(caId);
  });

  it("permission_denied: names the caller may not claim", async () => {
    const denied = async (request: Record<string, unknown>, caller?: Parameters<TestPlatform["call"]>[0]) =>
      (await expectCode(sign(request, caller), "permission_denied")).reason;
    expect(await denied({ csr: await csr("ed25519", "/CN=somebody-else") })).toBe("NAME_NOT_ALLOWED");
    expect(
      await denied({ csr: await csr("ed25519", `/CN=${ada.caller.userId}`, "DNS:evil.example.com") }),
    ).toBe("NAME_NOT_ALLOWED");
    expect(
      await denied({ csr: await csr("ed25519", `/CN=${ada.caller.userId}`, "email:ceo@example.com") }),
    ).toBe("NAME_NOT_ALLOWED");
    // Server names must be the workspace's targets.
    expect(
      await denied({ csr: await csr("ed25519", "/CN=bank.example.com"), usage: Usage.SERVER_AUTH }),
    ).toBe("NAME_NOT_ALLOWED");
    expect(
      await denied({ csr: await csr("ed25519", "/CN=db", "IP:192.0.2.99"), usage: Usage.SERVER_AUTH }),
    ).toBe("NAME_NOT_ALLOWED");
    // Viewers get no server certificates at all.
    const viewer = await t.signUp();
    await t.storage.members.insert({
      workspaceId: ada.workspaceId,
      userId: viewer.caller.userId,
      role: "viewer",
      createdAt: t.clock.now(),
      updatedAt: t.clock.now(),
    });
    const ssh = await createAuthority(t, ada, { type: "ed25519" }, { name: "ssh" });
    await insertTarget(t, ada.workspaceId, ssh.id, { name: "db", endpoints: ["[2001:db8::7]:4022"] });
    expect(
      await denied({ csr: await csr("ed25519", "/CN=db"), usage: Usage.SERVER_AUTH }, viewer.caller),
    ).toBe("ROLE_LACKS_PERMISSION");
    // ...but a client certificate naming themselves.
    await sign({ csr: await csr("ed25519", `/CN=${viewer.caller.userId}`) }, viewer.caller);
    // An editor may name a target and its endpoint address, in any textual form.
    const res = await sign({
      csr: await csr("ed25519", "/CN=db", "DNS:DB,IP:2001:0db8:0:0:0:0:0:7"),
      usage: Usage.SERVER_AUTH,
    });
    expect(await verify(t, res, "sslserver")).toContain(": OK");
  });

  it("invalid_argument for malformed CSRs and key types the authority refuses; failed_precondition and not_found for authorities", async () => {
    const bad = await expectCode(
      sign({ csr: "-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n" }),
      "invalid_argument",
    );
    expect(bad.reason).toBe("INVALID_CSR");
    const good = await csr("ed25519", `/CN=${ada.caller.userId}`);
    // One bit of the signature (the last bytes of the DER) flipped.
    const der = Buffer.from(good.replace(/-----[^-]+-----|\s/g, ""), "base64");
    der[der.length - 5]! ^= 0x01;
    const tampered = `-----BEGIN CERTIFICATE REQUEST-----\n${der.toString("base64")}\n-----END CERTIFICATE REQUEST-----\n`;
    expect((await expectCode(sign({ csr: tampered }), "invalid_argument")).message).toMatch(/signature/);
    await expectCode(sign({ csr: "" }), "invalid_argument");
    await expectCode(sign({ csr: good, usage: 9 }), "invalid_argument");
    const edOnly = await createAuthority(
      t,
      ada,
      { type: "ed25519" },
      {
        name: "ed-only",
        authorityType: AuthorityType.X509,
        allowedKeyTypes: [CertificateKeyType.ED25519],
      },
    );
    const rsaCsr = await csr("rsa-2048", `/CN=${ada.caller.userId}`);
    expect((await expectCode(sign({ caId: edOnly.id, csr: rsaCsr }), "invalid_argument")).reason).toBe(
      "KEY_TYPE_NOT_ALLOWED",
    );
    const ssh = await createAuthority(t, ada, { type: "ed25519" }, { name: "ssh" });
    expect((await expectCode(sign({ caId: ssh.id, csr: good }), "failed_precondition")).reason).toBe(
      "WRONG_AUTHORITY_TYPE",
    );
    await expectCode(sign({ caId: crypto.randomUUID(), csr: good }), "not_found");
    const bob = await t.owner();
    await expectCode(sign({ csr: good }, bob.caller), "not_found");
  });
});
