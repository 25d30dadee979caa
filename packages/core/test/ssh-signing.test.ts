/**
 * SignSSHCertificate through `platform.invoke`: what the certificates say (read back by
 * `ssh-keygen -L`, which also verifies the signature), who may have which, the codes of every
 * refusal, TTL rules, the ledger and the audit trail.
 */

import { createHash } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import {
  AuthorityType,
  CertificateKeyType,
  CertificateService,
  SignSSHCertificateRequest_CertificateType as CertType,
  ServiceAccountService,
  WorkspaceService,
} from "@wap/api";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { issuanceResource } from "../src/certificates/issuance/record.js";
import { createCallContext } from "../src/context.js";
import { describeKeySpec } from "../src/crypto/key-types.js";
import {
  createAuthority,
  duration,
  insertDaemon,
  insertTarget,
  type Owner,
  scratch,
  sshKeygenList,
  subjectKey,
} from "./support/certificates.js";
import { sshCaKeySpecs, sshSubjectKeySpecs } from "./support/key-specs.js";
import { createTestPlatform, expectCode, type TestPlatform } from "./support.js";

const caSpecs = sshCaKeySpecs;
const keySpecs = sshSubjectKeySpecs;

let files: Awaited<ReturnType<typeof scratch>>;
beforeAll(async () => {
  files = await scratch();
});
afterAll(() => files.remove());

const sign = (
  t: TestPlatform,
  caller: Parameters<TestPlatform["call"]>[0],
  request: Record<string, unknown>,
) => t.call(caller, CertificateService.method.signSSHCertificate, request);

/** The SHA256 fingerprint ssh-keygen prints for an authorized_keys line. */
function fingerprintOf(line: string): string {
  const blob = Buffer.from(line.split(" ")[1]!, "base64");
  return `SHA256:${createHash("sha256").update(blob).digest("base64").replace(/=+$/, "")}`;
}

describe("every authority x key combination, read back by ssh-keygen -L", () => {
  let t: TestPlatform;
  let ada: Owner;
  const cas = new Map<string, { id: string; publicKey: string }>();

  beforeAll(async () => {
    t = await createTestPlatform();
    ada = await t.owner();
    for (const spec of caSpecs) {
      const ca = await createAuthority(t, ada, spec, {
        userCriticalOptions: { "force-command": "/usr/bin/true", "source-address": "10.0.0.0/8" },
      });
      cas.set(describeKeySpec(spec), { id: ca.id, publicKey: ca.publicKey });
    }
  }, 120_000);
  afterAll(() => t.platform.close());

  const combinations = caSpecs.flatMap((ca) => keySpecs.map((key) => [describeKeySpec(ca), key] as const));

  it.each(combinations)("user certificate from a %s authority for a %o key", async (caName, keySpec) => {
    const ca = cas.get(caName)!;
    const key = await subjectKey(keySpec);
    const res = await sign(t, ada.caller, {
      workspaceId: ada.workspaceId,
      caId: ca.id,
      type: CertType.USER,
      publicKey: `${key.line}\n`,
    });
    expect(res.caId).toBe(ca.id);
    expect(res.caPublicKey).toBe(ca.publicKey);
    const listed = await sshKeygenList(files, res.signedCertificate);
    expect(listed.type).toMatch(/-cert-v01@openssh\.com user certificate$/);
    expect(listed.principals).toEqual([ada.caller.userId]);
    expect(listed.signingCa).toContain(fingerprintOf(ca.publicKey));
    if (caName.startsWith("rsa")) expect(listed.signingCa).toContain("(using rsa-sha2-512)");
    expect(listed.criticalOptions).toEqual(["force-command /usr/bin/true", "source-address 10.0.0.0/8"]);
    expect(listed.extensions).toContain("permit-pty");
    expect(listed.keyId).toMatch(
      new RegExp(`^wap:${ada.workspaceId}:user:${ada.caller.userId}:[0-9a-f-]{36}$`),
    );
    const entry = await t.storage.issuedCertificates.findBySerial(ada.workspaceId, ca.id, listed.serial);
    expect(entry).toMatchObject({ kind: "ssh_user", keyId: listed.keyId, principals: [ada.caller.userId] });
    expect(entry?.keyFingerprint).toBe(fingerprintOf(key.line));
  });

  it.each(caSpecs.map(describeKeySpec))("host certificate from a %s authority", async (caName) => {
    const ca = cas.get(caName)!;
    // An address of its own: one another target of the workspace also has is named by neither.
    const address = `127.0.1.${caSpecs.map(describeKeySpec).indexOf(caName) + 1}`;
    const target = await insertTarget(t, ada.workspaceId, ca.id, { endpoints: [`${address}:4022`] });
    const daemon = await insertDaemon(t, ada.workspaceId, target.id);
    const key = await subjectKey({ type: "ed25519" }, "");
    const res = await sign(t, daemon.caller, {
      workspaceId: ada.workspaceId,
      type: CertType.HOST,
      publicKey: `${key.line}\n`,
    });
    const listed = await sshKeygenList(files, res.signedCertificate);
    expect(listed.type).toMatch(/ host certificate$/);
    // The target id first, then the names a plain `ssh <host>` is checked against.
    expect(listed.principals).toEqual([target.id, target.name, address]);
    expect(listed.criticalOptions).toEqual([]);
    expect(listed.extensions).toEqual([]);
    expect(res.caPublicKey.split("\n")[0]).toBe(ca.publicKey);
    expect(listed.signingCa).toContain(fingerprintOf(ca.publicKey));
  });
});

describe("SignSSHCertificate rules", () => {
  let t: TestPlatform;
  let ada: Owner;
  let ca: Awaited<ReturnType<typeof createAuthority>>;
  let key: string;
  const now = () => t.clock.now().getTime();

  beforeEach(async () => {
    t = await createTestPlatform();
    ada = await t.owner();
    ca = await createAuthority(
      t,
      ada,
      { type: "ed25519" },
      { userDefaultTtl: duration(3600), userMaxTtl: duration(7200) },
    );
    key = (await subjectKey({ type: "ed25519" })).line;
  });
  afterEach(() => t.platform.close());

  const userSign = (
    request: Record<string, unknown> = {},
    caller: Parameters<TestPlatform["call"]>[0] = ada.caller,
  ) =>
    sign(t, caller, {
      workspaceId: ada.workspaceId,
      caId: ca.id,
      type: CertType.USER,
      publicKey: key,
      ...request,
    });

  it("backdates valid_after by five minutes and applies the default TTL when none is asked for", async () => {
    const res = await userSign();
    const listed = await sshKeygenList(files, res.signedCertificate);
    const start = new Date(now() - 300_000).toISOString().slice(0, 19);
    const end = new Date(now() + 3600_000).toISOString().slice(0, 19);
    expect([listed.validFrom, listed.validTo]).toEqual([start, end]);
    expect(res.expiresAt?.seconds).toBe(BigInt((now() + 3600_000) / 1000));
  });

  it("honours a TTL within the maximum and cuts one above it to the maximum (expiresAt says so)", async () => {
    const within = await userSign({ ttl: duration(600) });
    expect(Number(within.expiresAt?.seconds) * 1000).toBe(now() + 600_000);
    const above = await userSign({ ttl: duration(86_400) });
    expect(Number(above.expiresAt?.seconds) * 1000).toBe(now() + 7200_000);
    const listed = await sshKeygenList(files, above.signedCertificate);
    expect(listed.validTo).toBe(new Date(now() + 7200_000).toISOString().slice(0, 19));
  });

  it("never issues past the authority's end", async () => {
    const short = await createAuthority(
      t,
      ada,
      { type: "ed25519" },
      {
        name: "short-lived",
        lifetime: duration(2_628_000),
        hostDefaultTtl: duration(31_536_000),
        hostMaxTtl: duration(31_536_000),
      },
    );
    const target = await insertTarget(t, ada.workspaceId, short.id);
    const res = await sign(t, ada.caller, {
      workspaceId: ada.workspaceId,
      type: CertType.HOST,
      targetId: target.id,
      publicKey: key,
    });
    expect(Number(res.expiresAt?.seconds)).toBe(Number(short.notAfter?.seconds));
  });

  it("gives a daemon's host certificate the target id, the target's authority and more than 7 days", async () => {
    const other = await createAuthority(t, ada, { type: "ecdsa", curve: "P-256" }, { name: "hosts" });
    const target = await insertTarget(t, ada.workspaceId, other.id);
    const daemon = await insertDaemon(t, ada.workspaceId, target.id);
    // As the daemon sends it: no target, no TTL, no CA, a trailing newline and no comment.
    const hostKey = `${(await subjectKey({ type: "ed25519" }, "")).line}\n`;
    const res = await sign(t, daemon.caller, {
      workspaceId: ada.workspaceId,
      type: CertType.HOST,
      publicKey: hostKey,
    });
    expect(res.caId).toBe(other.id);
    expect(res.caPublicKey).toBe(other.publicKey);
    const listed = await sshKeygenList(files, res.signedCertificate);
    expect(listed.principals).toEqual([target.id, target.name, "127.0.0.1"]);
    const ttlDays = (Number(res.expiresAt?.seconds) * 1000 - now()) / 86_400_000;
    expect(ttlDays).toBeGreaterThan(7);
    expect(ttlDays).toBeLessThanOrEqual(30);
    expect(listed.validFrom).toBe(new Date(now() - 300_000).toISOString().slice(0, 19));
    const ledger = await t.storage.issuedCertificates.list(ada.workspaceId, {
      limit: 10,
      offset: 0,
      kind: "ssh_host",
    });
    expect(ledger.items[0]).toMatchObject({
      requesterType: "daemon",
      requesterId: daemon.id,
      targetId: target.id,
    });
    // An explicit empty caId, and the daemon's own target named, are the same request.
    await sign(t, daemon.caller, {
      workspaceId: ada.workspaceId,
      caId: "",
      targetId: target.id,
      type: CertType.HOST,
      publicKey: hostKey,
    });
    // Unset type from a daemon means host.
    const untyped = await sign(t, daemon.caller, { workspaceId: ada.workspaceId, publicKey: hostKey });
    expect((await sshKeygenList(files, untyped.signedCertificate)).type).toMatch(/host certificate$/);
  });

  it("signs with the workspace default when caId is left out or empty", async () => {
    await createAuthority(t, ada, { type: "ed25519" }, { name: "second" });
    for (const caId of [undefined, ""]) {
      const res = await userSign({ caId });
      expect(res.caId).toBe(ca.id);
    }
  });

  it("names a service account by its id", async () => {
    const { token } = await t.call(ada.caller, ServiceAccountService.method.createServiceAccount, {
      workspaceId: ada.workspaceId,
      name: "deployer",
      roleName: "viewer",
    });
    const { caller } = await t.platform.authenticate({ bearer: token });
    const res = await userSign({}, caller);
    const listed = await sshKeygenList(files, res.signedCertificate);
    expect(caller.kind).toBe("service_account");
    expect(listed.principals).toEqual([(caller as { serviceAccountId: string }).serviceAccountId]);
  });

  it("records every certificate in the ledger and the audit log, with unique serials under concurrency", async () => {
    const results = await Promise.all(Array.from({ length: 60 }, () => userSign()));
    const serials = await Promise.all(
      results.map(async (r) => (await sshKeygenList(files, r.signedCertificate)).serial),
    );
    expect(new Set(serials).size).toBe(60);
    const ledger = await t.storage.issuedCertificates.list(ada.workspaceId, { limit: 100, offset: 0 });
    expect(ledger.total).toBe(60);
    expect(new Set(ledger.items.map((e) => e.serial))).toEqual(new Set(serials));
    expect(ledger.items[0]).toMatchObject({
      caId: ca.id,
      caKeyVersion: 1,
      kind: "ssh_user",
      requesterType: "user",
      requesterId: ada.caller.userId,
      targetId: null,
      validBefore: new Date(now() + 3600_000),
      validAfter: new Date(now() - 300_000),
    });
    const audit = await t.storage.auditEvents.list(ada.workspaceId, {
      limit: 100,
      offset: 0,
      action: "certificate.sign_ssh_user",
    });
    expect(audit.total).toBe(60);
    expect(new Set(audit.items.map((e) => e.resource))).toEqual(new Set(ledger.items.map(issuanceResource)));
  });

  it("draws a new serial when one is taken (a collision is retried, not refused)", async () => {
    const first = await userSign();
    const taken = (await sshKeygenList(files, first.signedCertificate)).serial;
    const takenBytes = Buffer.alloc(8);
    takenBytes.writeBigUInt64BE(BigInt(taken));
    const random = t.platform.services.random;
    const original = random.bytes;
    let collisions = 1;
    const spy = vi.spyOn(random, "bytes").mockImplementation((n) => {
      if (n === 8 && collisions-- > 0) return new Uint8Array(takenBytes);
      return original(n);
    });
    try {
      const second = await userSign();
      expect((await sshKeygenList(files, second.signedCertificate)).serial).not.toBe(taken);
    } finally {
      spy.mockRestore();
    }
    expect((await t.storage.issuedCertificates.list(ada.workspaceId, { limit: 10, offset: 0 })).total).toBe(
      2,
    );
  });

  it("records nothing for a caller whose deadline has passed", async () => {
    const controller = new AbortController();
    controller.abort();
    const request = { workspaceId: ada.workspaceId, caId: ca.id, type: CertType.USER, publicKey: key };
    await expectCode(
      t.platform.invoke(
        CertificateService.method.signSSHCertificate,
        createCallContext(ada.caller, { signal: controller.signal }),
        create(CertificateService.method.signSSHCertificate.input, request),
      ),
      "deadline_exceeded",
    );
    expect((await t.storage.issuedCertificates.list(ada.workspaceId, { limit: 10, offset: 0 })).total).toBe(
      0,
    );
  });

  describe("refusals, with precise codes", () => {
    it("not_found: an unknown authority, another workspace's authority, an unknown target", async () => {
      await expectCode(userSign({ caId: crypto.randomUUID() }), "not_found");
      const bob = await t.owner();
      const bobs = await createAuthority(t, bob, { type: "ed25519" });
      const error = await expectCode(userSign({ caId: bobs.id }), "not_found");
      expect(error.reason).toBe("CERTIFICATE_AUTHORITY_NOT_FOUND");
      await expectCode(
        sign(t, ada.caller, {
          workspaceId: bob.workspaceId,
          caId: bobs.id,
          type: CertType.USER,
          publicKey: key,
        }),
        "not_found",
      );
      await expectCode(userSign({ type: CertType.HOST, targetId: crypto.randomUUID() }), "not_found");
      const bobsTarget = await insertTarget(t, bob.workspaceId, bobs.id);
      await expectCode(
        userSign({ type: CertType.HOST, targetId: bobsTarget.id, caId: undefined }),
        "not_found",
      );
    });

    it("failed_precondition: an X.509 authority, an inactive one, no default, not the target's", async () => {
      const x509 = await createAuthority(
        t,
        ada,
        { type: "ed25519" },
        { name: "tls", authorityType: AuthorityType.X509 },
      );
      expect((await expectCode(userSign({ caId: x509.id }), "failed_precondition")).reason).toBe(
        "WRONG_AUTHORITY_TYPE",
      );
      await t.call(ada.caller, CertificateService.method.updateCertificateAuthority, {
        workspaceId: ada.workspaceId,
        id: ca.id,
        isActive: false,
      });
      expect((await expectCode(userSign(), "failed_precondition")).reason).toBe(
        "CERTIFICATE_AUTHORITY_INACTIVE",
      );
      const bare = await t.owner();
      await expectCode(
        sign(t, bare.caller, { workspaceId: bare.workspaceId, type: CertType.USER, publicKey: key }),
        "failed_precondition",
      );
      const other = await createAuthority(t, ada, { type: "ed25519" }, { name: "other" });
      const target = await insertTarget(t, ada.workspaceId, other.id);
      const mismatch = await expectCode(
        userSign({ type: CertType.HOST, targetId: target.id }),
        "failed_precondition",
      );
      expect(mismatch.reason).toBe("NOT_THE_TARGET_AUTHORITY");
    });

    it("failed_precondition: an expired authority", async () => {
      const short = await createAuthority(
        t,
        ada,
        { type: "ed25519" },
        { name: "brief", lifetime: duration(2_628_000) },
      );
      t.clock.advance(2_628_000_000);
      expect((await expectCode(userSign({ caId: short.id }), "failed_precondition")).reason).toBe(
        "CERTIFICATE_AUTHORITY_EXPIRED",
      );
    });

    it("invalid_argument: a key type the authority does not allow, a malformed key, bad fields", async () => {
      const edOnly = await createAuthority(
        t,
        ada,
        { type: "ed25519" },
        {
          name: "ed-only",
          allowedKeyTypes: [CertificateKeyType.ED25519],
        },
      );
      const rsa = (await subjectKey({ type: "rsa", bits: 2048 })).line;
      const refused = await expectCode(userSign({ caId: edOnly.id, publicKey: rsa }), "invalid_argument");
      expect(refused.reason).toBe("KEY_TYPE_NOT_ALLOWED");
      expect(refused.violations[0]?.field).toBe("publicKey");
      const bad = await expectCode(userSign({ publicKey: "ssh-ed25519 AAAA not-a-key" }), "invalid_argument");
      expect(bad.reason).toBe("INVALID_PUBLIC_KEY");
      await expectCode(userSign({ publicKey: "" }), "invalid_argument");
      await expectCode(userSign({ publicKey: "x".repeat(10_001) }), "invalid_argument");
      await expectCode(userSign({ ttl: duration(59) }), "invalid_argument");
      await expectCode(userSign({ type: 7 }), "invalid_argument");
      await expectCode(userSign({ caId: "not-a-uuid" }), "invalid_argument");
      await expectCode(userSign({ type: CertType.HOST }), "invalid_argument");
    });

    it("permission_denied: host certificates for viewers, user certificates for daemons, another target for a daemon", async () => {
      const viewer = await t.signUp();
      await t.storage.members.insert({
        workspaceId: ada.workspaceId,
        userId: viewer.caller.userId,
        role: "viewer",
        createdAt: t.clock.now(),
        updatedAt: t.clock.now(),
      });
      const target = await insertTarget(t, ada.workspaceId, ca.id);
      const other = await insertTarget(t, ada.workspaceId, ca.id);
      // A viewer gets a user certificate naming themselves, but no host certificate.
      const own = await userSign({}, viewer.caller);
      expect((await sshKeygenList(files, own.signedCertificate)).principals).toEqual([viewer.caller.userId]);
      await expectCode(
        userSign({ type: CertType.HOST, targetId: target.id }, viewer.caller),
        "permission_denied",
      );
      // An editor (here the owner) may sign a host certificate for any target.
      await userSign({ type: CertType.HOST, targetId: other.id });
      const daemon = await insertDaemon(t, ada.workspaceId, target.id);
      await expectCode(userSign({ type: CertType.USER }, daemon.caller), "permission_denied");
      await expectCode(
        userSign({ type: CertType.HOST, targetId: other.id }, daemon.caller),
        "permission_denied",
      );
      // A stranger does not learn that the workspace exists.
      const stranger = await t.signUp();
      await expectCode(userSign({}, stranger.caller), "not_found");
    });

    it("daemons that are pending, rejected, or serve no target get no host certificate", async () => {
      const target = await insertTarget(t, ada.workspaceId, ca.id);
      const pending = await insertDaemon(t, ada.workspaceId, target.id, "pending");
      const hostSign = (caller: { kind: "daemon"; daemonId: string; workspaceId: string }) =>
        sign(t, caller, { workspaceId: ada.workspaceId, type: CertType.HOST, publicKey: key });
      expect((await expectCode(hostSign(pending.caller), "failed_precondition")).reason).toBe(
        "DAEMON_NOT_ACCEPTED",
      );
      const rejected = await insertDaemon(t, ada.workspaceId, target.id, "rejected");
      await expectCode(hostSign(rejected.caller), "permission_denied");
      const lonely = await insertDaemon(t, ada.workspaceId, null);
      await expectCode(hostSign(lonely.caller), "failed_precondition");
      const ghost = { kind: "daemon" as const, daemonId: crypto.randomUUID(), workspaceId: ada.workspaceId };
      await expectCode(hostSign(ghost), "unauthenticated");
    });
  });

  it("refuses to delete an authority a target uses (failed_precondition), and deletes it once unused", async () => {
    const target = await insertTarget(t, ada.workspaceId, ca.id);
    const del = () =>
      t.call(ada.caller, CertificateService.method.deleteCertificateAuthority, {
        workspaceId: ada.workspaceId,
        id: ca.id,
      });
    expect((await expectCode(del(), "failed_precondition")).reason).toBe("CERTIFICATE_AUTHORITY_IN_USE");
    await t.storage.targets.delete(ada.workspaceId, target.id);
    await del();
    await expectCode(userSign(), "not_found");
  });

  it("ignores another workspace's members entirely", async () => {
    const bob = await t.owner();
    await t.call(bob.caller, WorkspaceService.method.getWorkspace, { workspaceId: bob.workspaceId });
    await expectCode(userSign({}, bob.caller), "not_found");
  });
});
