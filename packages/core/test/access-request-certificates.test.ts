/**
 * Certificates under an approved access request, judged by real sshd, ssh and ssh-keygen. The
 * test plays the agent: it writes sshd's AuthorizedPrincipalsFile from the target's principal map
 * and its RevokedKeys from the authority's KRL, as the daemon does when told to sync.
 *
 * - before approval the requester's certificate logs in nowhere (not a principal of the login);
 * - after approval they log in; a certificate asked for a day ends at the approval's end, the
 *   answer says why, its key id names the request, and the request records it;
 * - withdrawal: the certificate is in the KRL (`ssh-keygen -Q`: REVOKED), the principal is gone,
 *   and the next login is refused.
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import {
  AccessRequestEventType,
  AccessRequestService,
  CertificateService,
  SignSSHCertificateRequest_CertificateType as CertType,
  GrantKind,
  PrincipalService,
  PrincipalType,
} from "@wap/api";
import { type RunningSshd, startSshd } from "@wap/test-kit/sshd";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { principalMapOf } from "../src/daemons/sync.js";
import { memberWithRole, type Person } from "./support/access.js";
import {
  createAuthority,
  identityFileText,
  insertTarget,
  type Owner,
  run,
  type SubjectKey,
  scratch,
  sshKeygenList,
  subjectKey,
} from "./support/certificates.js";
import { createTestPlatform, type TestPlatform } from "./support.js";

let t: TestPlatform;
let ada: Owner;
let bob: Person;
let carol: Person;
let files: Awaited<ReturnType<typeof scratch>>;
let sshd: RunningSshd;
let caId = "";
let targetId = "";
let key: SubjectKey;
let identity = "";
const paths = { ca: "", principals: "", krl: "" };

beforeAll(async () => {
  t = await createTestPlatform();
  t.clock.set(new Date()); // sshd checks validity against the real clock
  ada = await t.owner();
  bob = await memberWithRole(t, ada.workspaceId, "viewer");
  carol = await memberWithRole(t, ada.workspaceId, "admin");
  files = await scratch();
  key = await subjectKey({ type: "ed25519" }, "bob@laptop");
  identity = await files.file("id_bob", identityFileText(key), 0o600);
  const ca = await createAuthority(t, ada, { type: "ed25519" });
  caId = ca.id;
  targetId = (await insertTarget(t, ada.workspaceId, caId)).id;
  paths.ca = await files.file("trusted_user_ca_keys", `${ca.publicKey}\n`);
  paths.principals = join(files.dir, "principals");
  paths.krl = join(files.dir, "revoked_keys");
  sshd = await startSshd({
    authConfig: [
      `TrustedUserCAKeys ${paths.ca}`,
      `AuthorizedPrincipalsFile ${paths.principals}`,
      `RevokedKeys ${paths.krl}`,
    ],
  });
  await t.call(ada.caller, PrincipalService.method.setPrincipals, {
    workspaceId: ada.workspaceId,
    targetId,
    usernames: [sshd.user],
  });
  const [principal] = await t.storage.principals.listByTargets(ada.workspaceId, [targetId]);
  await t.call(ada.caller, PrincipalService.method.addSubjectsToPrincipal, {
    workspaceId: ada.workspaceId,
    id: principal!.id,
    subjectIds: [bob.caller.userId],
    type: PrincipalType.USER,
    kind: GrantKind.ON_REQUEST,
    approval: { maxDuration: { seconds: 3600n, nanos: 0 }, approverRoles: ["admin"] },
  });
  await syncAgent();
}, 180_000);

afterAll(async () => {
  await sshd?.stop();
  await files?.remove();
  await t?.platform.close();
});

/** What the agent writes when told to sync: the login's principals, the authority's KRL. */
async function syncAgent() {
  const logins = await principalMapOf(t.storage, ada.workspaceId, targetId, t.clock.now());
  await writeFile(paths.principals, (logins.get(sshd.user) ?? []).map((id) => `${id}\n`).join(""));
  const { revocationList } = await t.call(ada.caller, CertificateService.method.getRevocationList, {
    workspaceId: ada.workspaceId,
    caId,
  });
  await writeFile(paths.krl, revocationList);
  return revocationList;
}

async function certificate(ttlSeconds: number) {
  const res = await t.call(bob.caller, CertificateService.method.signSSHCertificate, {
    workspaceId: ada.workspaceId,
    caId,
    targetId,
    type: CertType.USER,
    publicKey: key.line,
    ttl: { seconds: BigInt(ttlSeconds), nanos: 0 },
  });
  const file = await files.file(
    `bob-${Math.random().toString(36).slice(2)}-cert.pub`,
    `${res.signedCertificate}\n`,
  );
  return { ...res, file, listed: await sshKeygenList(files, res.signedCertificate) };
}

const login = (certificateFile: string) =>
  sshd.ssh({ identityFile: identity, certificateFile, command: "echo in" });

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

describe("certificates under an access request, as sshd judges them", () => {
  it("logs in only while approved, with a certificate that ends with the approval and is revoked on withdrawal", async () => {
    const before = await certificate(600);
    expect(before.listed.keyId).not.toMatch(/request/);
    expect((await login(before.file)).code).toBe(255);

    const { request } = await t.call(bob.caller, AccessRequestService.method.createAccessRequest, {
      workspaceId: ada.workspaceId,
      targetId,
      login: sshd.user,
      duration: { seconds: 300n, nanos: 0 },
      reason: "deploy hotfix",
    });
    const { request: approved } = await t.call(
      carol.caller,
      AccessRequestService.method.approveAccessRequest,
      {
        workspaceId: ada.workspaceId,
        id: request!.id,
      },
    );
    await syncAgent();
    const cert = await certificate(86_400);
    expect((await login(cert.file)).stdout.trim()).toBe("in");

    // Validity ends at the approval's end, and the answer says why.
    const endsAt = Number(approved!.endsAt!.seconds);
    expect(Number(cert.expiresAt!.seconds)).toBeLessThanOrEqual(endsAt);
    expect(Number(cert.grantedTtl!.seconds)).toBeLessThanOrEqual(300);
    expect(cert.ttlNote).toContain(`access request ${request!.id}`);
    expect(Date.parse(`${cert.listed.validTo}Z`) / 1000).toBeLessThanOrEqual(endsAt);
    expect(cert.listed.keyId).toMatch(new RegExp(`:request:${request!.id}$`));
    // The request records it, linked to the ledger entry of that key id.
    const { request: used } = await t.call(bob.caller, AccessRequestService.method.getAccessRequest, {
      workspaceId: ada.workspaceId,
      id: request!.id,
    });
    const usedEvent = used!.events.find((e) => e.type === AccessRequestEventType.USED);
    expect(usedEvent?.actorId).toBe(bob.caller.userId);
    const ledger = await t.call(ada.caller, CertificateService.method.listIssuedCertificates, {
      workspaceId: ada.workspaceId,
      caId,
    });
    const entry = ledger.certificates.find((c) => c.keyId === cert.listed.keyId);
    expect(entry?.serial).toBe(cert.listed.serial);

    // Withdrawal: revoked into the KRL, no longer a principal, refused at the next login (the
    // agent's next sync, with no wait in between).
    await t.call(carol.caller, AccessRequestService.method.withdrawAccessRequest, {
      workspaceId: ada.workspaceId,
      id: request!.id,
      reason: "done",
    });
    const krl = await syncAgent();
    expect(await queried(krl, cert.file)).toBe("revoked");
    expect(await queried(krl, before.file)).toBe("ok");
    const refused = await login(cert.file);
    expect(refused.code).toBe(255);
    expect(sshd.logs()).toMatch(/revoked/i);
    const logins = await principalMapOf(t.storage, ada.workspaceId, targetId, t.clock.now());
    expect(logins.get(sshd.user)).toEqual([]);
  });
});
