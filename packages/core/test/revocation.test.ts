/**
 * Revocation as relying parties enforce it: RevokeCertificate -> the KRL GetRevocationList
 * returns, written where a real sshd's RevokedKeys reads it (as an agent writes it) -> that
 * certificate no longer logs in while another of the same user does; a removed member's
 * certificates in the KRL; a revoked X.509 leaf refused by `openssl verify -crl_check` while
 * another passes; daemons told to fetch the list again; the ledger's queries and codes.
 * One sshd for the whole file.
 */
import { writeFile } from "node:fs/promises";
import { userInfo } from "node:os";
import { join } from "node:path";
import {
  AuthorityType,
  CertificateService,
  SignSSHCertificateRequest_CertificateType as CertType,
  IssuedCertificateType,
  RevocationFilter,
  RevocationReason,
  WorkspaceService,
} from "@wap/api";
import { type RunningSshd, startSshd } from "@wap/test-kit/sshd";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { Caller } from "../src/context.js";
import { daemonTopic } from "../src/daemons/events.js";
import type { EventPayload } from "../src/events/event-bus.js";
import {
  createAuthority,
  identityFileText,
  insertDaemon,
  insertTarget,
  type Owner,
  run,
  type SubjectKey,
  scratch,
  sshKeygenList,
  subjectKey,
} from "./support/certificates.js";
import { createTestPlatform, expectCode, type TestPlatform } from "./support.js";

let t: TestPlatform;
let ada: Owner;
let files: Awaited<ReturnType<typeof scratch>>;
let sshd: RunningSshd;
let caId: string;
const keys: Record<"laptop" | "desktop", SubjectKey> = {} as never;
const identities: Record<string, string> = {};

const revocationList = async (id = caId) =>
  t.call(ada.caller, CertificateService.method.getRevocationList, { workspaceId: ada.workspaceId, caId: id });

beforeAll(async () => {
  t = await createTestPlatform();
  t.clock.set(new Date()); // sshd and openssl check validity against the real clock
  ada = await t.owner();
  files = await scratch();
  keys.laptop = await subjectKey({ type: "ed25519" }, "ada@laptop");
  keys.desktop = await subjectKey({ type: "ecdsa", curve: "P-256" }, "ada@desktop");
  for (const [name, key] of Object.entries(keys)) {
    identities[name] = await files.file(`id_${name}`, identityFileText(key), 0o600);
  }
  const ca = await createAuthority(t, ada, { type: "ed25519" });
  caId = ca.id;
  sshd = await startSshd({
    trustedUserCaKeys: [ca.publicKey],
    principalsForUser: { [userInfo().username]: [ada.caller.userId] },
    revokedKeys: (await revocationList()).revocationList,
  });
}, 180_000);

afterAll(async () => {
  await sshd?.stop();
  await files?.remove();
  await t?.platform.close();
});

async function certificate(key: SubjectKey, caller: Caller = ada.caller, workspaceId = ada.workspaceId) {
  const res = await t.call(caller, CertificateService.method.signSSHCertificate, {
    workspaceId,
    caId,
    type: CertType.USER,
    publicKey: key.line,
  });
  const listed = await sshKeygenList(files, res.signedCertificate);
  return {
    ...res,
    serial: listed.serial,
    file: await files.file("cert-cert.pub", `${res.signedCertificate}\n`),
  };
}

const login = (identity: string, certificateFile: string) =>
  sshd.ssh({ identityFile: identity, certificateFile, command: "echo in" });

/** What `ssh-keygen -Q` says of a certificate against a KRL. */
async function queried(krl: Uint8Array, certFile: string): Promise<"revoked" | "ok"> {
  const path = join(files.dir, `krl-${Math.random().toString(36).slice(2)}`);
  await writeFile(path, krl);
  return run("ssh-keygen", ["-Q", "-f", path, certFile]).then(
    () => "ok",
    (e: { stdout: string }) => {
      if (/REVOKED/.test(e.stdout)) return "revoked";
      throw e;
    },
  );
}

describe("SSH: revocation that sshd enforces", () => {
  it("a revoked certificate is refused at the next login while another of the same user logs in", async () => {
    const laptop = await certificate(keys.laptop);
    const desktop = await certificate(keys.desktop);
    expect((await login(identities.laptop!, laptop.file)).stdout.trim()).toBe("in");
    expect((await login(identities.desktop!, desktop.file)).stdout.trim()).toBe("in");

    const { revoked } = await t.call(ada.caller, CertificateService.method.revokeCertificate, {
      workspaceId: ada.workspaceId,
      caId,
      serial: laptop.serial,
      reason: RevocationReason.KEY_COMPROMISE,
    });
    expect(revoked).toHaveLength(1);
    expect(revoked[0]).toMatchObject({
      serial: laptop.serial,
      revoked: true,
      revocationReason: RevocationReason.KEY_COMPROMISE,
      revokedBy: `user:${ada.caller.userId}`,
    });

    const list = await revocationList();
    expect(list).toMatchObject({ format: "openssh-krl", entries: 1 });
    expect(await queried(list.revocationList, laptop.file)).toBe("revoked");
    expect(await queried(list.revocationList, desktop.file)).toBe("ok");
    await sshd.writeRevokedKeys(list.revocationList);

    const refused = await login(identities.laptop!, laptop.file);
    expect(refused.code).toBe(255);
    expect(sshd.logs()).toMatch(/revoked/i);
    expect((await login(identities.desktop!, desktop.file)).stdout.trim()).toBe("in");

    // Revoking again changes nothing; the ledger says who revoked it and why.
    const again = await t.call(ada.caller, CertificateService.method.revokeCertificate, {
      workspaceId: ada.workspaceId,
      caId,
      serial: laptop.serial,
    });
    expect(again.revoked).toEqual([]);
    const { certificate: entry } = await t.call(ada.caller, CertificateService.method.getIssuedCertificate, {
      workspaceId: ada.workspaceId,
      id: "-",
      caId,
      serial: laptop.serial,
    });
    expect(entry).toMatchObject({ revoked: true, revocationReason: RevocationReason.KEY_COMPROMISE });
  });

  it("revoking by key fingerprint takes every live certificate of that key", async () => {
    const first = await certificate(keys.desktop);
    const second = await certificate(keys.desktop);
    const { revoked } = await t.call(ada.caller, CertificateService.method.revokeCertificate, {
      workspaceId: ada.workspaceId,
      keyFingerprint: (await ledgerEntry(first.serial)).keyFingerprint,
    });
    expect(revoked.map((r) => r.serial)).toEqual(expect.arrayContaining([first.serial, second.serial]));
    const list = await revocationList();
    for (const c of [first, second]) expect(await queried(list.revocationList, c.file)).toBe("revoked");
  });

  it("a member removed: their certificates are revoked in the same change and listed in the KRL", async () => {
    const bob = await t.signUp();
    await t.storage.members.insert({
      workspaceId: ada.workspaceId,
      userId: bob.caller.userId,
      role: "editor",
      createdAt: t.clock.now(),
      updatedAt: t.clock.now(),
    });
    const bobKey = await subjectKey({ type: "ed25519" }, "bob@laptop");
    const bobCert = await certificate(bobKey, bob.caller);
    expect(await queried((await revocationList()).revocationList, bobCert.file)).toBe("ok");

    await t.call(ada.caller, WorkspaceService.method.removeWorkspaceMember, {
      workspaceId: ada.workspaceId,
      userId: bob.caller.userId,
    });
    expect(await queried((await revocationList()).revocationList, bobCert.file)).toBe("revoked");
    const entry = await ledgerEntry(bobCert.serial);
    expect(entry).toMatchObject({ revoked: true, revokedBy: "system:member.remove" });
  });

  it("daemons of targets trusting the authority are told to fetch the list again", async () => {
    const target = await insertTarget(t, ada.workspaceId, caId);
    const daemon = await insertDaemon(t, ada.workspaceId, target.id);
    const heard: EventPayload[] = [];
    await t.platform.services.events.subscribe(daemonTopic(daemon.id), (payload) => heard.push(payload));
    const cert = await certificate(keys.laptop);
    await t.call(ada.caller, CertificateService.method.revokeCertificate, {
      workspaceId: ada.workspaceId,
      caId,
      serial: cert.serial,
    });
    await vi.waitFor(() => expect(heard).toContainEqual({ kind: "notification", eventType: "REVOCATIONS" }));
    // And the daemon may read the list it is told about.
    const list = await t.call(daemon.caller, CertificateService.method.getRevocationList, {
      workspaceId: ada.workspaceId,
      caId,
    });
    expect(await queried(list.revocationList, cert.file)).toBe("revoked");
  });

  it("entries leave the list once their certificate has expired", async () => {
    const before = (await revocationList()).entries;
    expect(before).toBeGreaterThan(0);
    const saved = t.clock.now();
    t.clock.advance(25 * 3600 * 1000); // past the longest user certificate
    expect((await revocationList()).entries).toBe(0);
    t.clock.set(saved);
  });
});

async function ledgerEntry(serial: string) {
  const { certificate: entry } = await t.call(ada.caller, CertificateService.method.getIssuedCertificate, {
    workspaceId: ada.workspaceId,
    id: "-",
    caId,
    serial,
  });
  return entry!;
}

describe("X.509: a CRL that openssl enforces", () => {
  it("openssl verify -crl_check refuses the revoked leaf and accepts another", async () => {
    const ca = await createAuthority(
      t,
      ada,
      { type: "ecdsa", curve: "P-256" },
      { authorityType: AuthorityType.X509 },
    );
    expect(ca.crlUrl).toBe(`${t.platform.services.config.publicBaseUrl}/v1/crl/${ca.id}.crl`);
    const leaf = async (name: string) => {
      const keyPath = join(files.dir, `${name}.key`);
      const csrPath = join(files.dir, `${name}.csr`);
      await run("openssl", ["genpkey", "-algorithm", "ED25519", "-out", keyPath]);
      await run("openssl", [
        "req",
        "-new",
        "-key",
        keyPath,
        "-subj",
        `/CN=${ada.caller.userId}`,
        "-out",
        csrPath,
      ]);
      const { readFile } = await import("node:fs/promises");
      const res = await t.call(ada.caller, CertificateService.method.signX509Certificate, {
        workspaceId: ada.workspaceId,
        caId: ca.id,
        csr: await readFile(csrPath, "utf8"),
      });
      return { ...res, file: await files.file(`${name}.pem`, res.certificate) };
    };
    const [revokedLeaf, goodLeaf] = [await leaf("revoked"), await leaf("good")];
    const { stdout: text } = await run("openssl", ["x509", "-in", revokedLeaf.file, "-noout", "-text"]);
    expect(text).toContain(`URI:${ca.crlUrl}`);
    const serial = (await run("openssl", ["x509", "-in", revokedLeaf.file, "-noout", "-serial"])).stdout
      .trim()
      .replace(/^serial=/, "")
      .toLowerCase()
      .replace(/^0+/, "");

    // Leading zeros, typed or left out, name the same certificate.
    const { revoked } = await t.call(ada.caller, CertificateService.method.revokeCertificate, {
      workspaceId: ada.workspaceId,
      caId: ca.id,
      serial: `000${serial}`,
      reason: RevocationReason.SUPERSEDED,
    });
    expect(revoked.map((r) => r.serial.replace(/^0+/, ""))).toEqual([serial]);
    const list = await revocationList(ca.id);
    expect(list).toMatchObject({ format: "x509-crl", entries: 1, crlUrl: ca.crlUrl });
    const crlDer = join(files.dir, "ca.crl");
    await writeFile(crlDer, list.revocationList);
    const crlPem = join(files.dir, "ca-crl.pem");
    await run("openssl", ["crl", "-inform", "DER", "-in", crlDer, "-out", crlPem]);
    const caFile = await files.file("ca.pem", ca.certificate);
    const verify = (leafFile: string) =>
      run("openssl", ["verify", "-crl_check", "-CAfile", caFile, "-CRLfile", crlPem, leafFile]).then(
        (r) => r.stdout,
        (e: { stdout: string; stderr: string }) => `${e.stdout}${e.stderr}`,
      );
    expect(await verify(goodLeaf.file)).toContain(": OK");
    expect(await verify(revokedLeaf.file)).toMatch(/certificate revoked/);
  });
});

describe("the issuance ledger", () => {
  it("lists newest first with filters and pages; gets one entry by id or serial", async () => {
    const all = await t.call(ada.caller, CertificateService.method.listIssuedCertificates, {
      workspaceId: ada.workspaceId,
      caId,
      limit: 100,
    });
    expect(all.total).toBeGreaterThan(3);
    const times = all.certificates.map((c) => Number(c.createdAt?.seconds));
    expect([...times].sort((a, b) => b - a)).toEqual(times);

    const revoked = await t.call(ada.caller, CertificateService.method.listIssuedCertificates, {
      workspaceId: ada.workspaceId,
      caId,
      revocation: RevocationFilter.REVOKED,
      limit: 100,
    });
    expect(revoked.certificates.length).toBeGreaterThan(0);
    expect(revoked.certificates.every((c) => c.revoked)).toBe(true);
    const live = await t.call(ada.caller, CertificateService.method.listIssuedCertificates, {
      workspaceId: ada.workspaceId,
      caId,
      revocation: RevocationFilter.NOT_REVOKED,
      type: IssuedCertificateType.SSH_USER,
      subjectId: ada.caller.userId,
      limit: 100,
    });
    expect(live.certificates.every((c) => !c.revoked && c.requesterId === ada.caller.userId)).toBe(true);
    expect(live.total + revoked.total).toBeLessThanOrEqual(all.total);

    const page = await t.call(ada.caller, CertificateService.method.listIssuedCertificates, {
      workspaceId: ada.workspaceId,
      caId,
      limit: 2,
      offset: 1,
    });
    expect(page.certificates.map((c) => c.id)).toEqual(all.certificates.slice(1, 3).map((c) => c.id));
    // Not counted: the entries up to this page's end, plus one because more follow.
    expect(page.total).toBe(4);

    // A window that ended before anything was issued matches nothing.
    const past = await t.call(ada.caller, CertificateService.method.listIssuedCertificates, {
      workspaceId: ada.workspaceId,
      validFrom: { seconds: 1n, nanos: 0 },
      validUntil: { seconds: 2n, nanos: 0 },
    });
    expect(past.total).toBe(0);

    const first = all.certificates[0]!;
    const { certificate: byId } = await t.call(ada.caller, CertificateService.method.getIssuedCertificate, {
      workspaceId: ada.workspaceId,
      id: first.id,
    });
    expect(byId).toEqual(first);
  });

  it("codes: invalid_argument for bad filters and selectors, not_found across workspaces, permission_denied for viewers", async () => {
    const list = (request: Record<string, unknown>, caller = ada.caller) =>
      t.call(caller, CertificateService.method.listIssuedCertificates, {
        workspaceId: ada.workspaceId,
        ...request,
      });
    await expectCode(list({ limit: 101 }), "invalid_argument");
    await expectCode(list({ type: 9 }), "invalid_argument");
    await expectCode(
      list({ validFrom: { seconds: 10n, nanos: 0 }, validUntil: { seconds: 5n, nanos: 0 } }),
      "invalid_argument",
    );
    const revoke = (request: Record<string, unknown>) =>
      t.call(ada.caller, CertificateService.method.revokeCertificate, {
        workspaceId: ada.workspaceId,
        ...request,
      });
    await expectCode(revoke({}), "invalid_argument");
    await expectCode(revoke({ serial: "12" }), "invalid_argument");
    await expectCode(
      revoke({ caId, serial: "12", keyFingerprint: `SHA256:${"A".repeat(43)}` }),
      "invalid_argument",
    );
    await expectCode(revoke({ keyFingerprint: "MD5:aa" }), "invalid_argument");
    await expectCode(revoke({ caId, serial: "12", reason: 42 }), "invalid_argument");
    await expectCode(revoke({ caId: crypto.randomUUID(), serial: "12" }), "not_found");

    const bob = await t.owner();
    await expectCode(
      t.call(bob.caller, CertificateService.method.getRevocationList, { workspaceId: bob.workspaceId, caId }),
      "not_found",
    );
    const { certificates } = await list({ limit: 1 });
    await expectCode(
      t.call(bob.caller, CertificateService.method.getIssuedCertificate, {
        workspaceId: bob.workspaceId,
        id: certificates[0]!.id,
      }),
      "not_found",
    );
    const viewer = await t.signUp();
    await t.storage.members.insert({
      workspaceId: ada.workspaceId,
      userId: viewer.caller.userId,
      role: "viewer",
      createdAt: t.clock.now(),
      updatedAt: t.clock.now(),
    });
    await expectCode(list({}, viewer.caller), "permission_denied");
    await expectCode(
      t.call(viewer.caller, CertificateService.method.revokeCertificate, {
        workspaceId: ada.workspaceId,
        caId,
        serial: "12",
      }),
      "permission_denied",
    );
  });
});
