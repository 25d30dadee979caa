/**
 * Certificates from the API (through `platform.invoke`, never made by hand) against a real
 * OpenSSH sshd and ssh client: user logins from Ed25519 and RSA authorities, the authority's
 * force-command and source-address honoured, host certificates accepted through an
 * @cert-authority line, and logins across a key rollover. Never skipped: if sshd cannot run,
 * these tests fail (see support/sshd.ts).
 */
import { userInfo } from "node:os";
import { CertificateService, SignSSHCertificateRequest_CertificateType as CertType } from "@wap/api";
import { sshPublicKeyLine } from "@wap/ssh-wire";
import { type RunningSshd, startSshd } from "@wap/test-kit/sshd";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Caller } from "../src/context.js";
import { generateKeyPair } from "../src/crypto/generate-key.js";
import {
  createAuthority,
  identityFileText,
  insertDaemon,
  insertTarget,
  type Owner,
  type SubjectKey,
  scratch,
  subjectKey,
} from "./support/certificates.js";
import { createTestPlatform, type TestPlatform } from "./support.js";

let t: TestPlatform;
let ada: Owner;
let files: Awaited<ReturnType<typeof scratch>>;
let userKey: SubjectKey;
let identityFile: string;
const running: RunningSshd[] = [];

beforeAll(async () => {
  t = await createTestPlatform();
  // sshd checks validity against the real clock.
  t.clock.set(new Date());
  ada = await t.owner();
  files = await scratch();
  userKey = await subjectKey({ type: "ed25519" }, "ada@platform");
  identityFile = await files.file("id_ed25519", identityFileText(userKey), 0o600);
});

afterAll(async () => {
  await Promise.all(running.map((s) => s.stop()));
  await files?.remove();
  await t?.platform.close();
});

async function sshd(options: Parameters<typeof startSshd>[0]): Promise<RunningSshd> {
  const server = await startSshd(options);
  running.push(server);
  return server;
}

async function userCertificate(caId: string, caller: Caller = ada.caller) {
  const res = await t.call(caller, CertificateService.method.signSSHCertificate, {
    workspaceId: ada.workspaceId,
    caId,
    type: CertType.USER,
    publicKey: userKey.line,
  });
  return { ...res, file: await files.file("id_ed25519-cert.pub", `${res.signedCertificate}\n`) };
}

const principals = () => ({ [userInfo().username]: [ada.caller.userId] });

describe("user certificates from the API log in", () => {
  const cas: Record<string, Awaited<ReturnType<typeof createAuthority>>> = {};
  let server: RunningSshd;

  beforeAll(async () => {
    cas.ed25519 = await createAuthority(t, ada, { type: "ed25519" }, { name: "users-ed25519" });
    cas.rsa = await createAuthority(t, ada, { type: "rsa", bits: 2048 }, { name: "users-rsa" });
    cas.forced = await createAuthority(
      t,
      ada,
      { type: "ed25519" },
      {
        name: "forced",
        userCriticalOptions: { "force-command": "echo forced", "source-address": "127.0.0.1/32,::1/128" },
      },
    );
    cas.elsewhere = await createAuthority(
      t,
      ada,
      { type: "ecdsa", curve: "P-256" },
      {
        name: "elsewhere",
        userCriticalOptions: { "source-address": "10.9.9.9/32" },
      },
    );
    server = await sshd({
      trustedUserCaKeys: Object.values(cas).map((ca) => ca.publicKey),
      principalsForUser: principals(),
    });
  }, 60_000);

  it.each(["ed25519", "rsa"])("from an %s authority", async (name) => {
    const cert = await userCertificate(cas[name]!.id);
    const result = await server.ssh({ identityFile, certificateFile: cert.file, command: "echo ok" });
    expect(result, server.logs()).toMatchObject({ code: 0, stdout: "ok\n" });
  });

  it("runs the authority's force-command, from a permitted source address", async () => {
    const cert = await userCertificate(cas.forced!.id);
    const result = await server.ssh({ identityFile, certificateFile: cert.file, command: "echo asked" });
    expect(result, server.logs()).toMatchObject({ code: 0, stdout: "forced\n" });
  });

  it("is refused from outside the authority's source-address", async () => {
    const cert = await userCertificate(cas.elsewhere!.id);
    const result = await server.ssh({ identityFile, certificateFile: cert.file, command: "echo ok" });
    expect(result.code).toBe(255);
    expect(server.logs()).toMatch(/not from a permitted source address/);
  });

  it("is refused for a member whose id the server does not list", async () => {
    const other = await t.signUp();
    await t.storage.members.insert({
      workspaceId: ada.workspaceId,
      userId: other.caller.userId,
      role: "viewer",
      createdAt: t.clock.now(),
      updatedAt: t.clock.now(),
    });
    const cert = await userCertificate(cas.ed25519!.id, other.caller);
    const result = await server.ssh({ identityFile, certificateFile: cert.file, command: "echo ok" });
    expect(result.code).toBe(255);
  });
});

describe("a host certificate from the API, as a daemon sets it up", () => {
  let server: RunningSshd;
  let targetId: string;
  let caPublicKey: string;
  let userCert: string;

  beforeAll(async () => {
    const ca = await createAuthority(t, ada, { type: "ecdsa", curve: "P-384" }, { name: "hosts" });
    const target = await insertTarget(t, ada.workspaceId, ca.id);
    targetId = target.id;
    const daemon = await insertDaemon(t, ada.workspaceId, target.id);
    const hostKey = await generateKeyPair({ type: "ed25519" });
    const res = await t.call(daemon.caller, CertificateService.method.signSSHCertificate, {
      workspaceId: ada.workspaceId,
      type: CertType.HOST,
      publicKey: `${sshPublicKeyLine(hostKey.publicKeySpkiDer)}\n`,
    });
    caPublicKey = res.caPublicKey;
    // The daemon trusts for users exactly the lines it got with its host certificate.
    server = await sshd({
      trustedUserCaKeys: res.caPublicKey.split("\n"),
      principalsForUser: principals(),
      hostKeyPkcs8: hostKey.privateKeyPkcs8Der,
      hostCertificate: res.signedCertificate,
    });
    userCert = (await userCertificate(ca.id)).file;
  }, 60_000);

  const connect = (knownHostsLine: string, hostKeyAlias = targetId) =>
    server.ssh({ identityFile, certificateFile: userCert, knownHostsLine, hostKeyAlias, command: "echo ok" });

  it("is accepted through @cert-authority with StrictHostKeyChecking=yes, as the CLI writes it", async () => {
    const result = await connect(`@cert-authority * ${caPublicKey.split("\n")[0]}`);
    expect(result, `${result.stderr}\n${server.logs()}`).toMatchObject({ code: 0, stdout: "ok\n" });
  });

  it("is refused under another name than its target id", async () => {
    const result = await connect(`@cert-authority * ${caPublicKey.split("\n")[0]}`, crypto.randomUUID());
    expect(result.code).toBe(255);
  });
});

describe("across a rollover", () => {
  it("certificates of the old key keep logging in while it is trusted, the new key signs at once", async () => {
    const ca = await createAuthority(t, ada, { type: "ed25519" }, { name: "rolling" });
    const before = await userCertificate(ca.id);
    expect(before.caPublicKey).toBe(ca.publicKey);

    const { certificateAuthority: rolled } = await t.call(
      ada.caller,
      CertificateService.method.rolloverCertificateAuthority,
      {
        workspaceId: ada.workspaceId,
        id: ca.id,
      },
    );
    expect(rolled!.publicKey).not.toBe(ca.publicKey);
    const after = await userCertificate(ca.id);
    // The signing key first, the retired one after it: what the daemon writes for its sshd.
    expect(after.caPublicKey).toBe(`${rolled!.publicKey}\n${ca.publicKey}`);

    const both = await sshd({
      trustedUserCaKeys: after.caPublicKey.split("\n"),
      principalsForUser: principals(),
    });
    for (const cert of [before, after]) {
      const result = await both.ssh({ identityFile, certificateFile: cert.file, command: "echo ok" });
      expect(result, both.logs()).toMatchObject({ code: 0, stdout: "ok\n" });
    }
    // The old key matters: a server trusting only the new one refuses the older certificate.
    const newOnly = await sshd({ trustedUserCaKeys: [rolled!.publicKey], principalsForUser: principals() });
    expect((await newOnly.ssh({ identityFile, certificateFile: before.file, command: "echo ok" })).code).toBe(
      255,
    );
    expect((await newOnly.ssh({ identityFile, certificateFile: after.file, command: "echo ok" })).code).toBe(
      0,
    );
  });
});
