/**
 * Grant limits, judged by real sshd, ssh and ssh-keygen: a certificate signed for a login carries
 * its grant's limits, and sshd enforces them (the pinned source address, no PTY, no forwarding,
 * a one-command list as force-command); the daemon lets a limited grant's certificates in under
 * the grant's principal only, so a certificate without the limits is refused; a request for
 * more than the grant is `invalid_argument` naming the field; the ledger records the limits;
 * service accounts get the same.
 */

import { generateKeyPairSync, randomBytes } from "node:crypto";
import { create, type DescMessage, type DescMethodUnary, type MessageInitShape } from "@bufbuild/protobuf";
import {
  CertificateService,
  SignSSHCertificateRequest_CertificateType as CertType,
  DaemonService,
  PrincipalService,
  PrincipalType,
  TeamService,
} from "@wap/api";
import { readSshCertificate, SshWriter } from "@wap/ssh-wire";
import {
  COMMAND_ALLOWLIST_EXTENSION,
  decodeCommandAllowlist,
  SINGLE_USE_EXTENSION,
  TARGET_EXTENSION,
} from "@wap/ssh-wire/extensions";
import { type RunningSshd, startSshd } from "@wap/test-kit/sshd";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Caller, createCallContext } from "../src/context.js";
import type { PlatformError } from "../src/errors.js";
import { memberWithRole, type Person, serviceAccountCaller } from "./support/access.js";
import {
  createAuthority,
  identityFileText,
  insertDaemon,
  insertTarget,
  type Owner,
  type SubjectKey,
  scratch,
  sshKeygenList,
  subjectKey,
} from "./support/certificates.js";
import { createTestPlatform, expectCode, type TestPlatform } from "./support.js";

let t: TestPlatform;
let ada: Owner;
let bob: Person;
let files: Awaited<ReturnType<typeof scratch>>;
let sshd: RunningSshd;
let caId = "";
let targetId = "";
let principalId = "";
let daemon: Awaited<ReturnType<typeof insertDaemon>>;
let key: SubjectKey;
let identity = "";

beforeAll(async () => {
  t = await createTestPlatform();
  t.clock.set(new Date()); // sshd checks validity against the real clock
  ada = await t.owner();
  bob = await memberWithRole(t, ada.workspaceId, "viewer");
  files = await scratch();
  key = await subjectKey({ type: "ed25519" }, "bob@laptop");
  identity = await files.file("id_bob", identityFileText(key), 0o600);
  const ca = await createAuthority(t, ada, { type: "ed25519" });
  caId = ca.id;
  targetId = (await insertTarget(t, ada.workspaceId, caId)).id;
  daemon = await insertDaemon(t, ada.workspaceId, targetId);
  sshd = await startSshd({ trustedUserCaKeys: [ca.publicKey], principalsForUser: {} });
  await t.call(ada.caller, PrincipalService.method.setPrincipals, {
    workspaceId: ada.workspaceId,
    targetId,
    usernames: [sshd.user],
  });
  principalId = (await t.storage.principals.listByTargets(ada.workspaceId, [targetId]))[0]!.id;
}, 120_000);

afterAll(async () => {
  await sshd?.stop();
  await files?.remove();
  await t?.platform.close();
});

/** A call from a client at `ipAddress`, as the server's edge records it. */
function callFrom<I extends DescMessage, O extends DescMessage>(
  caller: Caller,
  method: DescMethodUnary<I, O>,
  request: MessageInitShape<I>,
  ipAddress = "127.0.0.1",
) {
  return t.platform.invoke(method, createCallContext(caller, { ipAddress }), create(method.input, request));
}

const grant = (
  limits: Record<string, unknown> | undefined,
  subjectIds = [bob.caller.userId],
  type = PrincipalType.USER,
) =>
  t.call(ada.caller, PrincipalService.method.addSubjectsToPrincipal, {
    workspaceId: ada.workspaceId,
    id: principalId,
    subjectIds,
    type,
    ...(limits && { limits }),
  });

/** A security-key (FIDO) public key line as `ssh-keygen -t ed25519-sk` writes one. */
function skEd25519Line() {
  const blob = new SshWriter()
    .string(new TextEncoder().encode("sk-ssh-ed25519@openssh.com"))
    .string(randomBytes(32))
    .string(new TextEncoder().encode("ssh:"))
    .bytes();
  return {
    line: `sk-ssh-ed25519@openssh.com ${Buffer.from(blob).toString("base64")} bob@token`,
    certType: "sk-ssh-ed25519-cert-v01@openssh.com",
  };
}

/** The same for `ssh-keygen -t ecdsa-sk`: a P-256 point, then the application. */
function skEcdsaLine() {
  const jwk = generateKeyPairSync("ec", { namedCurve: "P-256" }).publicKey.export({ format: "jwk" });
  const point = Buffer.concat([
    Buffer.from([4]),
    Buffer.from(jwk.x!, "base64url"),
    Buffer.from(jwk.y!, "base64url"),
  ]);
  const blob = new SshWriter()
    .string(new TextEncoder().encode("sk-ecdsa-sha2-nistp256@openssh.com"))
    .string(new TextEncoder().encode("nistp256"))
    .string(point)
    .string(new TextEncoder().encode("ssh:"))
    .bytes();
  return {
    line: `sk-ecdsa-sha2-nistp256@openssh.com ${Buffer.from(blob).toString("base64")}`,
    certType: "sk-ecdsa-sha2-nistp256-cert-v01@openssh.com",
  };
}

/** What the agent does on sync: writes the principals the server sends for the login. */
async function syncAgent() {
  const { principals } = await t.call(daemon.caller, DaemonService.method.syncDaemon, {
    users: [],
    privateIps: [],
    metadata: {},
  });
  const ids = principals.find((p) => p.username === sshd.user)?.ids ?? [];
  await sshd.writePrincipals(sshd.user, ids);
  return ids;
}

async function certificate(
  caller: Caller = bob.caller,
  extra: Record<string, unknown> = {},
  ipAddress = "127.0.0.1",
) {
  const res = await callFrom(
    caller,
    CertificateService.method.signSSHCertificate,
    {
      workspaceId: ada.workspaceId,
      caId,
      targetId,
      type: CertType.USER,
      publicKey: key.line,
      login: sshd.user,
      ...extra,
    },
    ipAddress,
  );
  const file = await files.file(
    `c-${Math.random().toString(36).slice(2)}-cert.pub`,
    `${res.signedCertificate}\n`,
  );
  return { ...res, file, listed: await sshKeygenList(files, res.signedCertificate) };
}

const ssh = (certificateFile: string, command: string, clientArgs: string[] = []) =>
  sshd.ssh({ identityFile: identity, certificateFile, command, clientArgs });

describe("a grant with limits", () => {
  let cert: Awaited<ReturnType<typeof certificate>>;

  beforeAll(async () => {
    await grant({ pinClientAddress: true, sourceCidrs: ["127.0.0.0/8"] });
    const ids = await syncAgent();
    // The daemon lets the grant's certificates in under the grant's principal, not the bare id.
    expect(ids).toHaveLength(1);
    expect(ids[0]).toMatch(new RegExp(`^${bob.caller.userId}\\+[0-9a-f]{16}$`));
    cert = await certificate();
  }, 60_000);

  it("is written into the certificate: ssh-keygen -L shows exactly what the grant allows", () => {
    expect(cert.listed.raw).toMatch(/Critical Options:\s*\n\s*source-address 127\.0\.0\.1\s*\n/);
    expect(cert.listed.raw).toMatch(/Extensions: \(none\)/);
  });

  it("lets in from the address the server saw at issuance", async () => {
    const result = await ssh(cert.file, "echo in");
    expect(result, sshd.logs()).toMatchObject({ code: 0, stdout: "in\n" });
  });

  it("refuses a second source address", async () => {
    const result = await ssh(cert.file, "echo in", ["-o", "BindAddress=127.0.0.2"]);
    expect(result.code).toBe(255);
    expect(sshd.logs()).toMatch(/not from a permitted source address/);
  });

  it("gives no PTY", async () => {
    const result = await ssh(cert.file, "tty", ["-tt"]);
    expect(result.stderr).toMatch(/PTY allocation request failed/);
    expect(result.stdout).not.toMatch(/\/dev\/pts/);
  });

  it("refuses port forwarding", async () => {
    const result = await ssh(cert.file, "echo in", ["-o", "ExitOnForwardFailure=yes", "-R", "0:127.0.0.1:9"]);
    expect(result.code).toBe(255);
    expect(result.stderr).toMatch(/forwarding failed/i);
  });

  it("refuses a certificate without the grant's limits", async () => {
    const plain = await certificate(bob.caller, { login: undefined });
    expect(plain.listed.raw).not.toMatch(/source-address/);
    const result = await ssh(plain.file, "echo in");
    expect(result.code).toBe(255);
  });

  it("is recorded in the ledger with each certificate", async () => {
    const { certificates } = await t.call(ada.caller, CertificateService.method.listIssuedCertificates, {
      workspaceId: ada.workspaceId,
      subjectId: bob.caller.userId,
    });
    const entry = certificates.find((c) => c.serial === cert.listed.serial);
    expect(entry?.limits).toMatchObject({
      sourceCidrs: ["127.0.0.1"],
      permitPty: false,
      permitPortForwarding: false,
    });
    expect(entry?.principals).toEqual([expect.stringMatching(/\+[0-9a-f]{16}$/)]);
  });

  it("refuses a request for more than it allows, naming the field", async () => {
    const error = await expectCode(
      certificate(bob.caller, { limits: { permitPty: true } }),
      "invalid_argument",
    );
    expect((error as PlatformError).message).toMatch(/limits\.permitPty/);
    await expectCode(
      certificate(bob.caller, { limits: { sourceCidrs: ["10.0.0.0/8"] } }),
      "invalid_argument",
    );
    await expectCode(certificate(bob.caller, { limits: { pinClientAddress: false } }), "invalid_argument");
  });

  it("refuses a pinned certificate to a client outside its blocks", async () => {
    await expectCode(certificate(bob.caller, {}, "192.0.2.7"), "permission_denied");
  });
});

describe("what a grant allows", () => {
  it("a PTY and port forwarding when allowed; a one-command list is sshd's force-command", async () => {
    await grant({ permitPty: true, commands: ["echo allowed"] });
    await syncAgent();
    const cert = await certificate();
    expect(cert.listed.raw).toMatch(/force-command echo allowed/);
    expect(cert.listed.raw).toMatch(/permit-pty/);
    const signed = readSshCertificate(cert.signedCertificate);
    expect(decodeCommandAllowlist(signed.extensions[COMMAND_ALLOWLIST_EXTENSION]!)).toEqual(["echo allowed"]);
    const result = await ssh(cert.file, "echo other");
    expect(result, sshd.logs()).toMatchObject({ code: 0, stdout: "allowed\n" });
  });

  it("only sk- keys when it says so, with verify-required", async () => {
    await grant({ skKeysOnly: true, verifyRequired: true });
    const error = await expectCode(certificate(), "invalid_argument");
    expect((error as PlatformError).message).toMatch(/publicKey/);
    for (const sk of [skEd25519Line(), skEcdsaLine()]) {
      const cert = await certificate(bob.caller, { publicKey: sk.line });
      expect(cert.listed.type).toMatch(new RegExp(`^${sk.certType} user certificate`));
      expect(cert.listed.raw).toMatch(/verify-required/);
      // The CLI and the agent read it too.
      expect(readSshCertificate(cert.signedCertificate)).toMatchObject({
        certType: sk.certType,
        criticalOptions: { "verify-required": "" },
      });
    }
  });

  it("never a security key for a host", async () => {
    const error = await expectCode(
      t.call(ada.caller, CertificateService.method.signSSHCertificate, {
        workspaceId: ada.workspaceId,
        targetId,
        type: CertType.HOST,
        publicKey: skEd25519Line().line,
      }),
      "invalid_argument",
    );
    expect(error.message).toMatch(/publicKey: a host key cannot be a security-key/);
  });

  it("under several grants, the most permissive that allows what is asked, never a union", async () => {
    const team = (
      await t.call(ada.caller, TeamService.method.createTeam, { workspaceId: ada.workspaceId, name: "ops" })
    ).team!;
    await t.call(ada.caller, TeamService.method.addTeamMember, {
      workspaceId: ada.workspaceId,
      teamId: team.id,
      userId: bob.caller.userId,
    });
    await grant({ permitPty: true });
    await grant({ permitPortForwarding: true, permitPty: false }, [team.id], PrincipalType.TEAM);
    // No single grant gives both.
    await expectCode(
      certificate(bob.caller, { limits: { permitPty: true, permitPortForwarding: true } }),
      "invalid_argument",
    );
    const forwarding = await certificate(bob.caller, { limits: { permitPortForwarding: true } });
    expect(forwarding.listed.raw).toMatch(/permit-port-forwarding/);
    expect(forwarding.listed.raw).not.toMatch(/permit-pty/);
    await syncAgent();
    const result = await ssh(forwarding.file, "echo in");
    expect(result, sshd.logs()).toMatchObject({ code: 0, stdout: "in\n" });
  });

  it("service accounts get the same limits", async () => {
    const sa = await serviceAccountCaller(t, ada, "viewer");
    await grant({ pinClientAddress: true }, [sa.serviceAccountId], PrincipalType.SERVICE_ACCOUNT);
    const cert = await certificate(sa);
    expect(cert.listed.raw).toMatch(/source-address 127\.0\.0\.1/);
    expect(cert.listed.raw).toMatch(/Extensions: \(none\)/);
  });

  it("a login without a grant of the caller is permission_denied", async () => {
    const carol = await memberWithRole(t, ada.workspaceId, "viewer");
    await expectCode(certificate(carol.caller), "permission_denied");
  });
});

describe("single-use certificates", () => {
  it("name their target and single use, and the ledger says so", async () => {
    await grant(undefined);
    const cert = await certificate(bob.caller, { singleUse: true });
    const signed = readSshCertificate(cert.signedCertificate);
    expect(signed.extensions[TARGET_EXTENSION]).toBe(targetId);
    expect(SINGLE_USE_EXTENSION in signed.extensions).toBe(true);
    expect(cert.listed.raw).toMatch(/target@wap/);
    const entry = (
      await t.call(ada.caller, CertificateService.method.listIssuedCertificates, {
        workspaceId: ada.workspaceId,
        subjectId: bob.caller.userId,
      })
    ).certificates.find((c) => c.serial === cert.listed.serial);
    expect(entry).toMatchObject({ singleUse: true, targetId });
  });

  it("need a target", async () => {
    const error = await expectCode(
      certificate(bob.caller, { singleUse: true, targetId: undefined, login: undefined }),
      "invalid_argument",
    );
    expect(error.message).toMatch(/targetId/);
  });

  it("a refusal the daemon reports is audited with the ledger entry", async () => {
    const cert = await certificate(bob.caller, { singleUse: true });
    const entry = (
      await t.call(ada.caller, CertificateService.method.listIssuedCertificates, {
        workspaceId: ada.workspaceId,
        subjectId: bob.caller.userId,
      })
    ).certificates.find((c) => c.serial === cert.listed.serial)!;
    await t.call(daemon.caller, DaemonService.method.syncDaemon, {
      users: [],
      privateIps: [],
      metadata: {},
      refusedCertificates: [{ serial: cert.listed.serial, reason: "replayed" }],
    });
    const { items } = await t.storage.auditEvents.list(ada.workspaceId, { limit: 5, offset: 0 });
    const refused = items.find((e) => e.action === "certificate.use_refused");
    expect(refused?.resource).toBe(
      `issued_certificate:${entry.id} serial=${cert.listed.serial} target=${targetId} reason=replayed`,
    );
    expect(refused?.actorId).toBe(daemon.id);
    await expectCode(
      t.call(daemon.caller, DaemonService.method.syncDaemon, {
        users: [],
        privateIps: [],
        metadata: {},
        refusedCertificates: [{ serial: "12; drop", reason: "replayed" }],
      }),
      "invalid_argument",
    );
  });
});
