/**
 * Staged rotation (RotateCertificateAuthority) against a real sshd and ssh at every phase: what
 * each phase promises logs in, with trust written from `caPublicKey` as a daemon writes it (and
 * known_hosts `@cert-authority` lines from the same text), and the old key refused once retired.
 * Also the phase rules: adjacent moves only, rollback, the one-step rollover refused meanwhile.
 */
import { userInfo } from "node:os";
import {
  CertificateService,
  SignSSHCertificateRequest_CertificateType as CertType,
  RotationPhase,
  TrustedKeyRole,
} from "@wap/api";
import { sshPublicKeyLine } from "@wap/ssh-wire";
import { type RunningSshd, startSshd } from "@wap/test-kit/sshd";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { publishedTrust } from "../src/certificates/publication.js";
import { generateKeyPair } from "../src/crypto/generate-key.js";
import {
  createAuthority,
  identityFileText,
  insertDaemon,
  insertTarget,
  type Owner,
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
let targetId: string;
let daemon: Awaited<ReturnType<typeof insertDaemon>>;
let identity: string;
let userLine: string;
let hostKey: Awaited<ReturnType<typeof generateKeyPair>>;

beforeAll(async () => {
  t = await createTestPlatform();
  t.clock.set(new Date());
  ada = await t.owner();
  files = await scratch();
  const userKey = await subjectKey({ type: "ed25519" }, "ada@rotation");
  userLine = userKey.line;
  identity = await files.file("id_rotation", identityFileText(userKey), 0o600);
  hostKey = await generateKeyPair({ type: "ed25519" });
  caId = (await createAuthority(t, ada, { type: "ed25519" })).id;
  targetId = (await insertTarget(t, ada.workspaceId, caId)).id;
  daemon = await insertDaemon(t, ada.workspaceId, targetId);
}, 120_000);

afterAll(async () => {
  await sshd?.stop();
  await files?.remove();
  await t?.platform.close();
});

const rotate = (phase: RotationPhase) =>
  t.call(ada.caller, CertificateService.method.rotateCertificateAuthority, {
    workspaceId: ada.workspaceId,
    id: caId,
    phase,
  });
const authority = async () =>
  (
    await t.call(ada.caller, CertificateService.method.getCertificateAuthority, {
      workspaceId: ada.workspaceId,
      id: caId,
    })
  ).certificateAuthority!;

async function userCertificate() {
  const res = await t.call(ada.caller, CertificateService.method.signSSHCertificate, {
    workspaceId: ada.workspaceId,
    caId,
    type: CertType.USER,
    publicKey: userLine,
  });
  const listed = await sshKeygenList(files, res.signedCertificate);
  return {
    ...res,
    signingCa: listed.signingCa,
    file: await files.file("id_rotation-cert.pub", `${res.signedCertificate}\n`),
  };
}

/** The daemon's host certificate, and the CA text it writes for sshd. */
async function hostCertificate() {
  const res = await t.call(daemon.caller, CertificateService.method.signSSHCertificate, {
    workspaceId: ada.workspaceId,
    targetId,
    type: CertType.HOST,
    publicKey: sshPublicKeyLine(hostKey.publicKeySpkiDer, "host"),
  });
  return { ...res, signingCa: (await sshKeygenList(files, res.signedCertificate)).signingCa };
}

/** (Re)starts sshd as a daemon configures it: host certificate, trusted keys from `caPublicKey`. */
async function configureSshd() {
  const host = await hostCertificate();
  await sshd?.stop();
  sshd = await startSshd({
    trustedUserCaKeys: host.caPublicKey.split("\n"),
    principalsForUser: { [userInfo().username]: [ada.caller.userId] },
    hostKeyPkcs8: hostKey.privateKeyPkcs8Der,
    hostCertificate: host.signedCertificate,
  });
  return host;
}

/** Logs in, checking the host certificate against `@cert-authority` lines of the trusted text. */
async function login(certificateFile: string, trusted: string) {
  const knownHostsLine = trusted
    .split("\n")
    .map((line) => `@cert-authority * ${line}`)
    .join("\n");
  return sshd.ssh({
    identityFile: identity,
    certificateFile,
    knownHostsLine,
    hostKeyAlias: targetId,
    command: "echo in",
  });
}

const { CURRENT, NEXT } = TrustedKeyRole;
/**
 * What GetCertificateAuthority and the anonymous trust endpoint say at this phase: the same keys
 * as `caPublicKey`, in its order, each with its role and what it signs ([role, user, host]).
 */
async function expectPublishedTrust(caPublicKey: string, expected: [TrustedKeyRole, boolean, boolean][]) {
  const { trustedKeys } = await authority();
  expect(trustedKeys.map((k) => [k.role, k.signsUserCertificates, k.signsHostCertificates])).toEqual(
    expected,
  );
  expect(trustedKeys.map((k) => k.publicKey)).toEqual(caPublicKey.split("\n"));
  expect((await publishedTrust(t.platform.services, caId, "user_ca_keys"))?.body).toBe(`${caPublicKey}\n`);
}

/** Logs in with known_hosts exactly as the anonymous trust endpoint publishes it. */
async function loginWithPublishedKnownHosts(certificateFile: string) {
  const knownHosts = await publishedTrust(t.platform.services, caId, "known_hosts", { hosts: targetId });
  return sshd.ssh({
    identityFile: identity,
    certificateFile,
    knownHostsLine: knownHosts!.body.trimEnd(),
    hostKeyAlias: targetId,
    command: "echo in",
  });
}

const fingerprintOf = async (line: string) => {
  const file = await files.file("key.pub", `${line}\n`);
  const { execFile } = await import("node:child_process");
  const { promisify } = await import("node:util");
  const { stdout } = await promisify(execFile)("ssh-keygen", ["-l", "-f", file]);
  return stdout.split(" ")[1]!;
};

describe("a full staged rotation with real sshd and ssh", () => {
  it("logs in at every phase as the phase promises, and refuses the old key once retired", async () => {
    const before = await authority();
    const oldKey = await fingerprintOf(before.publicKey);
    const host0 = await configureSshd();
    const user0 = await userCertificate();
    expect((await login(user0.file, host0.caPublicKey)).stdout.trim()).toBe("in");
    await expectPublishedTrust(host0.caPublicKey, [[CURRENT, true, true]]);

    // PUBLISHED: the new key is trusted everywhere; the old one still signs.
    const published = (await rotate(RotationPhase.PUBLISHED)).certificateAuthority!;
    expect(published).toMatchObject({ rotationPhase: RotationPhase.PUBLISHED, publicKey: before.publicKey });
    expect(published.nextPublicKey).toMatch(/^ssh-ed25519 /);
    const newKey = await fingerprintOf(published.nextPublicKey);
    const user1 = await userCertificate();
    expect(user1.signingCa).toContain(oldKey);
    expect(user1.caPublicKey.split("\n")).toEqual([before.publicKey, published.nextPublicKey]);
    await sshd.writeTrustedUserCaKeys(user1.caPublicKey.split("\n"));
    for (const cert of [user0, user1])
      expect((await login(cert.file, user1.caPublicKey)).stdout.trim()).toBe("in");
    await expectPublishedTrust(user1.caPublicKey, [
      [CURRENT, true, true],
      [NEXT, false, false],
    ]);

    // USER_SIGNING: user certificates from the new key, host certificates still from the old.
    await rotate(RotationPhase.USER_SIGNING);
    const user2 = await userCertificate();
    expect(user2.signingCa).toContain(newKey);
    expect((await hostCertificate()).signingCa).toContain(oldKey);
    for (const cert of [user0, user2])
      expect((await login(cert.file, user2.caPublicKey)).stdout.trim()).toBe("in");
    await expectPublishedTrust(user2.caPublicKey, [
      [CURRENT, false, true],
      [NEXT, true, false],
    ]);

    // HOST_SIGNING: the new key signs the host certificate too, and is listed first.
    await rotate(RotationPhase.HOST_SIGNING);
    const host3 = await configureSshd();
    expect(host3.signingCa).toContain(newKey);
    expect(host3.caPublicKey.split("\n")).toEqual([published.nextPublicKey, before.publicKey]);
    for (const cert of [user0, user2])
      expect((await login(cert.file, host3.caPublicKey)).stdout.trim()).toBe("in");
    await expectPublishedTrust(host3.caPublicKey, [
      [NEXT, true, true],
      [CURRENT, false, false],
    ]);
    expect((await loginWithPublishedKnownHosts(user2.file)).stdout.trim()).toBe("in");

    // RETIRED: the new key is the key; the old one is trusted no more.
    const done = (await rotate(RotationPhase.RETIRED)).certificateAuthority!;
    expect(done).toMatchObject({
      rotationPhase: RotationPhase.UNSPECIFIED,
      publicKey: published.nextPublicKey,
      nextPublicKey: "",
    });
    const user4 = await userCertificate();
    expect(user4.caPublicKey).toBe(published.nextPublicKey);
    await expectPublishedTrust(user4.caPublicKey, [[CURRENT, true, true]]);
    await sshd.writeTrustedUserCaKeys([user4.caPublicKey]);
    expect((await login(user4.file, user4.caPublicKey)).stdout.trim()).toBe("in");
    expect((await login(user2.file, user4.caPublicKey)).stdout.trim()).toBe("in");
    const refused = await login(user0.file, user4.caPublicKey);
    expect(refused.code).toBe(255);
    const entry = await t.storage.issuedCertificates.findBySerial(
      ada.workspaceId,
      caId,
      (await sshKeygenList(files, user4.signedCertificate)).serial,
    );
    expect(entry?.caKeyVersion).toBe(2);
  }, 300_000);
});

describe("phase rules", () => {
  it("moves one phase at a time, rolls back, and discards the next key when rolled back to the start", async () => {
    await expectCode(rotate(RotationPhase.USER_SIGNING), "failed_precondition");
    await expectCode(rotate(RotationPhase.RETIRED), "failed_precondition");
    const published = (await rotate(RotationPhase.PUBLISHED)).certificateAuthority!;
    await expectCode(
      t.call(ada.caller, CertificateService.method.rolloverCertificateAuthority, {
        workspaceId: ada.workspaceId,
        id: caId,
      }),
      "failed_precondition",
    );
    await rotate(RotationPhase.USER_SIGNING);
    expect((await userCertificate()).caPublicKey.split("\n")[1]).toBe(published.nextPublicKey);
    const back = (await rotate(RotationPhase.PUBLISHED)).certificateAuthority!;
    expect(back.nextPublicKey).toBe(published.nextPublicKey);
    expect((await userCertificate()).signingCa).toContain(await fingerprintOf(published.publicKey));
    const reset = (await rotate(RotationPhase.UNSPECIFIED)).certificateAuthority!;
    expect(reset).toMatchObject({ rotationPhase: RotationPhase.UNSPECIFIED, nextPublicKey: "" });
    expect((await userCertificate()).caPublicKey).toBe(published.publicKey);
    await expectCode(rotate(7 as RotationPhase), "invalid_argument");
  });
});
