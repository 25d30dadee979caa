/**
 * The enrolment token, EnrollDaemon and daemon request authentication,
 * with a real P-256 key signing real challenges.
 */
import { generateKeyPairSync, randomBytes } from "node:crypto";
import {
  AuthorityType,
  CertificateKeyType,
  CertificateService,
  DaemonService,
  DaemonStatus,
  TargetService,
  WorkspaceService,
} from "@wap/api";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { hashSecret } from "../src/auth/service-account-tokens.js";
import { createCallContext } from "../src/context.js";
import { authenticateDaemon, authenticateSignedRequest } from "../src/daemons/authenticate.js";
import { fallbackDaemonName, nameFromHostname } from "../src/daemons/names.js";
import { resourceNamePattern } from "../src/validation/bounds.js";
import { memberWithRole, type Owner, sshAuthority } from "./support/access.js";
import { aDaemonKey, callAsDaemon, daemonCaller, enroll, signChallenge } from "./support/daemons.js";
import { createTestPlatform, expectCode, type TestPlatform } from "./support.js";

const syncPath = "/platform.v1.DaemonService/SyncDaemon";
let t: TestPlatform;
let ada: Owner;
let token: string;
beforeEach(async () => {
  t = await createTestPlatform();
  ada = await t.owner();
  await sshAuthority(t, ada);
  token = await refresh();
});
afterEach(() => t.platform.close());

async function refresh(owner: Owner = ada) {
  const res = await t.call(owner.caller, DaemonService.method.refreshEnrollToken, {
    workspaceId: owner.workspaceId,
  });
  return res.token;
}

describe("RefreshEnrollToken / RevokeEnrollToken", () => {
  it("mints a token once, stores only its hash, and expires it after the workspace's enrollExpiry", async () => {
    const res = await t.call(ada.caller, DaemonService.method.refreshEnrollToken, {
      workspaceId: ada.workspaceId,
    });
    expect(res.token).toMatch(/^wapenr_[A-Za-z0-9_-]{43}$/);
    const expected = new Date(t.clock.now().getTime() + 24 * 3600 * 1000);
    expect(Number(res.expiresAt!.seconds) * 1000).toBe(expected.getTime());
    const stored = await t.storage.enrollTokens.find(ada.workspaceId);
    expect(stored).toMatchObject({ tokenHash: hashSecret(res.token), expiresAt: expected });
    expect(JSON.stringify(stored)).not.toContain(res.token);
    const { workspace } = await t.call(ada.caller, WorkspaceService.method.getWorkspace, {
      workspaceId: ada.workspaceId,
    });
    expect(Number(workspace!.settings!.enrollExpiresAt!.seconds) * 1000).toBe(expected.getTime());

    await t.call(ada.caller, WorkspaceService.method.updateWorkspaceSettings, {
      workspaceId: ada.workspaceId,
      enrollExpiry: { seconds: 300n, nanos: 0 },
    });
    const short = await refresh();
    t.clock.advance(299_000);
    await enroll(t, short, { hostname: "early" });
    t.clock.advance(1_000);
    await expectCode(enroll(t, short, { hostname: "late" }), "unauthenticated");
  });

  it("a refresh ends the previous token; a revoke ends the current one; both are idempotent", async () => {
    const second = await refresh();
    await expectCode(enroll(t, token), "unauthenticated");
    await enroll(t, second);
    await t.call(ada.caller, DaemonService.method.revokeEnrollToken, { workspaceId: ada.workspaceId });
    await t.call(ada.caller, DaemonService.method.revokeEnrollToken, { workspaceId: ada.workspaceId });
    await expectCode(enroll(t, second), "unauthenticated");
    expect(await t.storage.enrollTokens.find(ada.workspaceId)).toBeNull();
    expect((await t.storage.workspaces.findById(ada.workspaceId))?.enrollExpiresAt).toBeNull();
  });

  it("needs daemons.manage; other tenants cannot touch the token", async () => {
    const viewer = await memberWithRole(t, ada.workspaceId, "viewer");
    await expectCode(
      t.call(viewer.caller, DaemonService.method.refreshEnrollToken, { workspaceId: ada.workspaceId }),
      "permission_denied",
    );
    await expectCode(
      t.call(viewer.caller, DaemonService.method.revokeEnrollToken, { workspaceId: ada.workspaceId }),
      "permission_denied",
    );
    const editor = await memberWithRole(t, ada.workspaceId, "editor");
    await t.call(editor.caller, DaemonService.method.refreshEnrollToken, { workspaceId: ada.workspaceId });
    const bob = await t.owner();
    await expectCode(
      t.call(bob.caller, DaemonService.method.revokeEnrollToken, { workspaceId: ada.workspaceId }),
      "not_found",
    );
  });
});

describe("EnrollDaemon", () => {
  it("registers the key before answering, creates the target on the default CA, starts PENDING", async () => {
    const d = await enroll(t, token, { hostname: "Web-01.Prod.Example.com." });
    expect(d.response).toMatchObject({ workspaceId: ada.workspaceId, status: DaemonStatus.PENDING });
    expect(d.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(d.targetId).toMatch(/^[0-9a-f-]{36}$/);
    expect(d.response.config).toMatchObject({ recordSessions: false });
    // The very next call is signed with the key: it must verify already.
    const caller = await daemonCaller(t, d, DaemonService.method.syncDaemon);
    expect(caller).toEqual({ kind: "daemon", daemonId: d.id, workspaceId: ada.workspaceId });
    const defaultCa = await t.storage.certificateAuthorities.findDefault(ada.workspaceId, "ssh");
    const { target } = await t.call(ada.caller, TargetService.method.getTarget, {
      workspaceId: ada.workspaceId,
      id: d.targetId,
    });
    expect(target).toMatchObject({ name: "web-01-prod-example-com", caId: defaultCa!.id, daemonId: d.id });
    const { daemon } = await t.call(ada.caller, DaemonService.method.getDaemon, {
      workspaceId: ada.workspaceId,
      id: d.id,
    });
    expect(daemon).toMatchObject({
      name: "web-01-prod-example-com",
      status: DaemonStatus.PENDING,
      online: false,
    });
    const stored = await t.storage.daemons.findById(ada.workspaceId, d.id);
    expect(stored).toMatchObject({ authMethod: "tpm", targetId: d.targetId });
  });

  it("makes names unique and falls back when the hostname header is missing", async () => {
    const names: string[] = [];
    for (const hostname of ["db", "DB", "db", undefined, "...", "db-2"]) {
      const d = await enroll(t, token, hostname === undefined ? {} : { hostname });
      names.push((await t.storage.targets.findById(ada.workspaceId, d.targetId))!.name);
    }
    expect(names).toEqual(["db", "db-2", "db-3", fallbackDaemonName, `${fallbackDaemonName}-2`, "db-2-2"]);
  });

  it("links the named SSH CA; refuses unknown, X.509 and missing-default authorities", async () => {
    const second = await sshAuthority(t, ada, "second");
    const d = await enroll(t, token, { caId: second.id.toUpperCase() });
    expect((await t.storage.targets.findById(ada.workspaceId, d.targetId))?.caId).toBe(second.id);
    await expectCode(enroll(t, token, { caId: crypto.randomUUID() }), "not_found");
    await expectCode(enroll(t, token, { caId: "not-a-uuid" }), "not_found");
    const { certificateAuthority: x509 } = await t.call(
      ada.caller,
      CertificateService.method.createCertificateAuthority,
      {
        workspaceId: ada.workspaceId,
        name: "x509",
        keyType: CertificateKeyType.ECDSA,
        authorityType: AuthorityType.X509,
      },
    );
    await expectCode(enroll(t, token, { caId: x509!.id }), "failed_precondition");
    const bob = await t.owner();
    const bare = await refresh(bob);
    await expectCode(enroll(t, bare), "failed_precondition");
    expect((await t.storage.daemons.list(bob.workspaceId, { limit: 10, offset: 0 })).total).toBe(0);
  });

  it("starts ACCEPTED when the workspace auto-approves", async () => {
    await t.call(ada.caller, WorkspaceService.method.updateWorkspaceSettings, {
      workspaceId: ada.workspaceId,
      enrollAutoApprove: true,
    });
    const d = await enroll(t, token);
    expect(d.response.status).toBe(DaemonStatus.ACCEPTED);
  });

  it("answers already_exists to a signed request of an enrolled daemon, whatever its token", async () => {
    const d = await enroll(t, token);
    for (const presented of [token, "wapenr_revoked-or-wrong"]) {
      await expectCode(
        callAsDaemon(t, d, DaemonService.method.enrollDaemon, {
          token: presented,
          caId: "",
          authMethod: "tpm",
          authPubkey: d.key.pem,
        }),
        "already_exists",
      );
    }
  });

  it("re-enrols an unauthenticated request with a known key; refuses a rejected one clearly", async () => {
    const d = await enroll(t, token, { hostname: "web" });
    const again = await enroll(t, token, { key: d.key, hostname: "renamed" });
    expect({ id: again.id, targetId: again.targetId }).toEqual({ id: d.id, targetId: d.targetId });
    expect(again.response.status).toBe(DaemonStatus.PENDING);
    // The same key in another workspace is another daemon.
    const bob = await t.owner();
    await sshAuthority(t, bob);
    const elsewhere = await enroll(t, await refresh(bob), { key: d.key });
    expect(elsewhere.id).not.toBe(d.id);

    await t.call(ada.caller, DaemonService.method.updateDaemon, {
      workspaceId: ada.workspaceId,
      id: d.id,
      status: DaemonStatus.REJECTED,
    });
    const refused = await expectCode(enroll(t, token, { key: d.key }), "failed_precondition");
    expect(refused.message).toMatch(/rejected/);
  });

  it("lets the same key enrol again after the daemon deleted itself", async () => {
    const d = await enroll(t, token);
    await callAsDaemon(t, d, DaemonService.method.deleteDaemon, {});
    await expectCode(daemonCaller(t, d, DaemonService.method.syncDaemon), "unauthenticated");
    const again = await enroll(t, token, { key: d.key });
    expect(again.id).not.toBe(d.id);
    await daemonCaller(t, again, DaemonService.method.syncDaemon);
  });

  it("refuses keys that are not PEM P-256 and methods other than tpm/soft", async () => {
    const bad = (authPubkey: string, authMethod = "soft") =>
      t.platform.invoke(
        DaemonService.method.enrollDaemon,
        createCallContext({ kind: "anonymous" }),
        // biome-ignore lint/suspicious/noExplicitAny: raw request.
        { token, caId: "", authMethod, authPubkey } as any,
      );
    const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 }).publicKey.export({
      type: "spki",
      format: "pem",
    });
    const ed = generateKeyPairSync("ed25519").publicKey.export({ type: "spki", format: "pem" });
    const p384 = generateKeyPairSync("ec", { namedCurve: "P-384" }).publicKey.export({
      type: "spki",
      format: "pem",
    });
    for (const pem of [
      String(rsa),
      String(ed),
      String(p384),
      "garbage",
      aDaemonKey().pem.replace("A", "B"),
    ]) {
      await expectCode(bad(pem), "invalid_argument");
    }
    for (const method of ["", "TPM", "hsm"])
      await expectCode(bad(aDaemonKey().pem, method), "invalid_argument");
  });
});

describe("daemon authentication", () => {
  it("verifies challenges by the challenge rules: procedure, window, nonce, signature, id", async () => {
    const d = await enroll(t, token);
    const now = t.clock.now();
    const ok = (value: string, procedure = syncPath) =>
      authenticateDaemon(t.platform.services, { value, procedure });
    const nonce = randomBytes(12).toString("hex");
    await ok(signChallenge(d.key, d.id, syncPath, { at: now, nonce }));
    await expectCode(ok(signChallenge(d.key, d.id, syncPath, { at: now, nonce })), "unauthenticated");
    await expectCode(
      ok(signChallenge(d.key, d.id, "/platform.v1.DaemonService/DeleteDaemon", { at: now })),
      "unauthenticated",
    );
    // A window of minutes either way: clocks are never corrected.
    await ok(signChallenge(d.key, d.id, syncPath, { at: new Date(now.getTime() - 299_000) }));
    await ok(signChallenge(d.key, d.id, syncPath, { at: new Date(now.getTime() + 299_000) }));
    await expectCode(
      ok(signChallenge(d.key, d.id, syncPath, { at: new Date(now.getTime() - 302_000) })),
      "unauthenticated",
    );
    await expectCode(ok(signChallenge(aDaemonKey(), d.id, syncPath, { at: now })), "unauthenticated");
    await expectCode(ok(signChallenge(d.key, crypto.randomUUID(), syncPath, { at: now })), "unauthenticated");
    await expectCode(ok("garbage"), "unauthenticated");
  });

  it("a rejected daemon still authenticates; the nonce store is per daemon", async () => {
    const d = await enroll(t, token);
    const other = await enroll(t, token);
    await t.call(ada.caller, DaemonService.method.updateDaemon, {
      workspaceId: ada.workspaceId,
      id: d.id,
      status: DaemonStatus.REJECTED,
    });
    const nonce = randomBytes(12).toString("hex");
    const at = t.clock.now();
    await authenticateDaemon(t.platform.services, {
      value: signChallenge(d.key, d.id, syncPath, { at, nonce }),
      procedure: syncPath,
    });
    await authenticateDaemon(t.platform.services, {
      value: signChallenge(other.key, other.id, syncPath, { at, nonce }),
      procedure: syncPath,
    });
  });

  it("authenticateSignedRequest routes daemon ids to daemons, by family or by lookup", async () => {
    const d = await enroll(t, token);
    const value = () => signChallenge(d.key, d.id, syncPath, { at: t.clock.now() });
    const services = t.platform.services;
    expect(await authenticateSignedRequest(services, { value: value(), procedure: syncPath })).toMatchObject({
      kind: "daemon",
      daemonId: d.id,
    });
    expect(
      await authenticateSignedRequest(services, { value: value(), procedure: syncPath, family: "daemon" }),
    ).toMatchObject({ kind: "daemon" });
    // Sent as a device, a daemon's challenge is an unknown device.
    const asDevice = await expectCode(
      authenticateSignedRequest(services, { value: value(), procedure: syncPath, family: "device" }),
      "unauthenticated",
    );
    expect(asDevice.reason).toBe("INVALID_DEVICE_SIGNATURE");
    const unknown = await expectCode(
      authenticateSignedRequest(services, {
        value: signChallenge(d.key, crypto.randomUUID(), syncPath, { at: t.clock.now() }),
        procedure: syncPath,
      }),
      "unauthenticated",
    );
    expect(unknown.reason).toBe("INVALID_DEVICE_SIGNATURE");
  });
});

describe("names from hostnames", () => {
  it("always fit the target-name pattern, without dots, at most 63 characters", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 300 }), (hostname) => {
        const name = nameFromHostname(hostname);
        expect(name).toMatch(resourceNamePattern);
        expect(name).not.toContain(".");
        expect(name.length).toBeLessThanOrEqual(63);
      }),
    );
    expect(nameFromHostname("ip-10-0-0-1.eu-west-1.compute.internal")).toBe(
      "ip-10-0-0-1-eu-west-1-compute-internal",
    );
    expect(nameFromHostname("_svc")).toBe("svc");
    expect(nameFromHostname(undefined)).toBe(fallbackDaemonName);
  });
});
