/**
 * What a host certificate may name: only what an administrator set or approved for its target
 * (its name, its endpoints as set, or as its daemon first reported them), never a name or an
 * address another target claims, never the host name a daemon reports about itself. A change a
 * daemon reports later waits for approval. Principals read with the real `ssh-keygen -L`; the
 * impersonation checked with a real `ssh` against a real sshd holding the daemon's certificate.
 */
import { userInfo } from "node:os";
import {
  CertificateService,
  SignSSHCertificateRequest_CertificateType as CertType,
  DaemonService,
  DaemonStatus,
  TargetService,
} from "@wap/api";
import { sshPublicKeyLine } from "@wap/ssh-wire";
import { type RunningSshd, startSshd } from "@wap/test-kit/sshd";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateKeyPair } from "../src/crypto/generate-key.js";
import type { Owner } from "./support/access.js";
import { identityFileText, scratch, sshKeygenList, subjectKey } from "./support/certificates.js";
import { callAsDaemon, enrolledDaemon, type TestDaemon } from "./support/daemons.js";
import { createTestPlatform, type TestPlatform } from "./support.js";

let t: TestPlatform;
let ada: Owner;
let files: Awaited<ReturnType<typeof scratch>>;
let sshd: RunningSshd | undefined;
let hostKey: Awaited<ReturnType<typeof generateKeyPair>>;

beforeAll(async () => {
  t = await createTestPlatform();
  t.clock.set(new Date());
  ada = await t.owner();
  files = await scratch();
  hostKey = await generateKeyPair({ type: "ed25519" });
});
afterAll(async () => {
  await sshd?.stop();
  await files?.remove();
  await t?.platform.close();
});

const ws = () => ada.workspaceId;
const target = async (id: string) =>
  (await t.call(ada.caller, TargetService.method.getTarget, { workspaceId: ws(), id })).target!;
const setEndpoints = (id: string, endpoints: string[]) =>
  t.call(ada.caller, TargetService.method.updateTarget, { workspaceId: ws(), id, endpoints });
const sync = (daemon: TestDaemon, privateIps: string[], hostname = "web-1") =>
  callAsDaemon(t, daemon, DaemonService.method.syncDaemon, {
    users: ["ubuntu"],
    privateIps,
    metadata: { hostname },
  });

/** The daemon's host certificate and its principals as `ssh-keygen -L` reads them. */
async function hostCertificate(daemon: TestDaemon) {
  const res = await callAsDaemon(t, daemon, CertificateService.method.signSSHCertificate, {
    workspaceId: ws(),
    type: CertType.HOST,
    publicKey: `${sshPublicKeyLine(hostKey.publicKeySpkiDer, "")}\n`,
  });
  return { ...res, principals: (await sshKeygenList(files, res.signedCertificate)).principals };
}

describe("host certificate names", () => {
  it("name only what was approved for the target, never another target's name or address", async () => {
    const web = await enrolledDaemon(t, ada, "web-1");
    // Another target of the workspace, set up by an administrator.
    const { target: db } = await t.call(ada.caller, TargetService.method.createTarget, {
      workspaceId: ws(),
      name: "db-1",
      endpoints: ["10.0.0.10:22", "db.internal"],
    });

    // The first report, with the other target's address and a host name that is not the daemon's
    // to claim: its own address becomes the target's, the other waits, the host name is ignored.
    await sync(web, ["10.0.0.20:4022", "10.0.0.10:4022"], "github.com");
    expect(await target(web.targetId)).toMatchObject({
      endpoints: ["10.0.0.20:4022"],
      reportedEndpoints: ["10.0.0.20:4022", "10.0.0.10:4022"],
    });
    await t.call(ada.caller, DaemonService.method.updateDaemon, {
      workspaceId: ws(),
      id: web.id,
      status: DaemonStatus.ACCEPTED,
    });
    expect((await hostCertificate(web)).principals).toEqual([web.targetId, "web-1", "10.0.0.20"]);

    // A later change waits for approval, and the certificate does not name it meanwhile.
    await sync(web, ["10.0.0.30:4022"]);
    expect(await target(web.targetId)).toMatchObject({
      endpoints: ["10.0.0.20:4022"],
      reportedEndpoints: ["10.0.0.30:4022"],
    });
    expect((await hostCertificate(web)).principals).toEqual([web.targetId, "web-1", "10.0.0.20"]);

    // Approved (UpdateTarget with what was reported): named from the next certificate on.
    await setEndpoints(web.targetId, ["10.0.0.30:4022"]);
    expect((await target(web.targetId)).reportedEndpoints).toEqual([]);
    expect((await hostCertificate(web)).principals).toEqual([web.targetId, "web-1", "10.0.0.30"]);

    // An administrator giving it the other target's address or name: named by neither target.
    await setEndpoints(web.targetId, ["10.0.0.30:4022", "10.0.0.10:22", "db-1", "db.internal"]);
    expect((await hostCertificate(web)).principals).toEqual([web.targetId, "web-1", "10.0.0.30"]);
    const dbCertificate = await t.call(ada.caller, CertificateService.method.signSSHCertificate, {
      workspaceId: ws(),
      targetId: db!.id,
      type: CertType.HOST,
      publicKey: `${sshPublicKeyLine(hostKey.publicKeySpkiDer, "")}\n`,
    });
    expect((await sshKeygenList(files, dbCertificate.signedCertificate)).principals).toEqual([db!.id]);
  });

  it("do not let a real ssh client accept the daemon's host as another target", async () => {
    const rogue = await enrolledDaemon(t, ada, "rogue-1");
    await t.call(ada.caller, TargetService.method.createTarget, {
      workspaceId: ws(),
      name: "payments",
      endpoints: ["10.0.9.9:22"],
    });
    await sync(rogue, ["10.0.9.9:22", "10.0.9.10:22"], "payments");
    await t.call(ada.caller, DaemonService.method.updateDaemon, {
      workspaceId: ws(),
      id: rogue.id,
      status: DaemonStatus.ACCEPTED,
    });
    const host = await hostCertificate(rogue);
    expect(host.principals).toEqual([rogue.targetId, "rogue-1", "10.0.9.10"]);

    const user = await subjectKey({ type: "ed25519" }, "ada@names");
    const identity = await files.file("id_names", identityFileText(user), 0o600);
    const signed = await t.call(ada.caller, CertificateService.method.signSSHCertificate, {
      workspaceId: ws(),
      type: CertType.USER,
      publicKey: user.line,
    });
    const certificateFile = await files.file("id_names-cert.pub", `${signed.signedCertificate}\n`);
    sshd = await startSshd({
      trustedUserCaKeys: host.caPublicKey.split("\n"),
      principalsForUser: { [userInfo().username]: [ada.caller.userId] },
      hostKeyPkcs8: hostKey.privateKeyPkcs8Der,
      hostCertificate: host.signedCertificate,
    });
    const as = (name: string) =>
      sshd!.ssh({
        identityFile: identity,
        certificateFile,
        knownHostsLine: `@cert-authority * ${host.caPublicKey.split("\n")[0]}`,
        hostKeyAlias: name,
        command: "echo in",
      });
    expect((await as(rogue.targetId)).stdout.trim()).toBe("in");
    expect((await as("10.0.9.10")).stdout.trim()).toBe("in");
    // Even with `@cert-authority *`, its certificate does not pass for the other target.
    for (const name of ["payments", "10.0.9.9"]) {
      const refused = await as(name);
      expect(refused.code, name).toBe(255);
      expect(refused.stderr).toMatch(
        /Host key verification failed|certificate .* invalid|name is not a listed principal/i,
      );
    }
  }, 120_000);
});
