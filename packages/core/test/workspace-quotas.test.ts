/**
 * Per-workspace quotas: daemons, targets, service accounts, open sessions and recordings' bytes,
 * each refused past its limit with `resource_exhausted` naming the limit and its setting.
 */
import { randomUUID } from "node:crypto";
import { DaemonService, DaemonStatus, PrincipalType, ServiceAccountService, TargetService } from "@wap/api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openControlStream } from "../src/daemons/control.js";
import type { PlatformConfig } from "../src/operations/services.js";
import { startSessionRecording } from "../src/recordings/recorder.js";
import { defaultWorkspaceQuotaConfig } from "../src/workspaces/quotas.js";
import { sshAuthority } from "./support/access.js";
import { callAsDaemon, enroll, enrolledDaemon, grantLogin } from "./support/daemons.js";
import { createTestPlatform, expectCode, type TestPlatform } from "./support.js";

let t: TestPlatform;
const limits: Partial<PlatformConfig> = {
  workspaceMaxDaemons: 1,
  workspaceMaxTargets: 2,
  workspaceMaxServiceAccounts: 1,
  workspaceMaxOpenSessions: 1,
  workspaceMaxRecordingBytes: 4096,
};
beforeEach(async () => {
  t = await createTestPlatform({ config: limits as PlatformConfig });
});
afterEach(() => t.platform.close());

async function expectQuota(promise: Promise<unknown>, limit: number, what: string, env: string) {
  const error = await expectCode(promise, "resource_exhausted");
  expect(error.reason).toBe("WORKSPACE_QUOTA");
  expect(error.message).toContain(`limit of ${limit} ${what}`);
  expect(error.message).toContain(env);
}

describe("workspace quotas", () => {
  it("has documented defaults", () => {
    expect(defaultWorkspaceQuotaConfig).toEqual({
      workspaceMaxDaemons: 100,
      workspaceMaxTargets: 1000,
      workspaceMaxServiceAccounts: 100,
      workspaceMaxRecordingBytes: 10 * 1024 ** 3,
      workspaceMaxOpenSessions: 100,
    });
  });

  it("service accounts, targets and daemons stop at their limits; other workspaces are not affected", async () => {
    const ada = await t.owner();
    const ws = { workspaceId: ada.workspaceId };
    const createAccount = (name: string) =>
      t.call(ada.caller, ServiceAccountService.method.createServiceAccount, { ...ws, name });
    await createAccount("ci");
    await expectQuota(createAccount("ci-2"), 1, "service accounts", "WAP_WORKSPACE_MAX_SERVICE_ACCOUNTS");

    const daemon = await enrolledDaemon(t, ada, "web-1"); // one daemon, and its target
    const ca = await sshAuthority(t, ada);
    const { token } = await t.call(ada.caller, DaemonService.method.refreshEnrollToken, ws);
    await expectQuota(enroll(t, token, { hostname: "web-2" }), 1, "daemons", "WAP_WORKSPACE_MAX_DAEMONS");
    const createTarget = (name: string) =>
      t.call(ada.caller, TargetService.method.createTarget, {
        ...ws,
        name,
        caId: ca.id,
        endpoints: ["10.0.0.1:22"],
      });
    await createTarget("db");
    await expectQuota(createTarget("db-2"), 2, "targets", "WAP_WORKSPACE_MAX_TARGETS");
    expect((await t.storage.targets.list(ada.workspaceId, { limit: 10, offset: 0 })).total).toBe(2);
    expect(daemon.targetId).not.toBe("");

    // Another workspace has its own room.
    const grace = await t.owner();
    await t.call(grace.caller, ServiceAccountService.method.createServiceAccount, {
      workspaceId: grace.workspaceId,
      name: "ci",
    });
  });

  it("open sessions and recordings' bytes stop at their limits", async () => {
    const ada = await t.owner();
    const d = await enrolledDaemon(t, ada, "web-1");
    await grantLogin(t, ada, d.targetId, "ubuntu", PrincipalType.USER, [ada.caller.userId]);
    await t.call(ada.caller, DaemonService.method.updateDaemon, {
      workspaceId: ada.workspaceId,
      id: d.id,
      status: DaemonStatus.ACCEPTED,
      config: { recordSessions: true },
    });
    await openControlStream(
      t.platform.services,
      { kind: "daemon", daemonId: d.id, workspaceId: ada.workspaceId },
      "i/s",
    );
    await callAsDaemon(t, d, DaemonService.method.syncDaemon, {
      users: ["ubuntu"],
      privateIps: [],
      metadata: {},
    });
    const create = () =>
      t.call(ada.caller, DaemonService.method.createSession, {
        workspaceId: ada.workspaceId,
        daemonId: d.id,
        username: "ubuntu",
      });
    const { session } = await create();
    await expectQuota(create(), 1, "open terminal sessions", "WAP_WORKSPACE_MAX_OPEN_SESSIONS");

    // The recording may fill what the quota leaves, no more: it ends truncated.
    const record = (await t.storage.daemonSessions.findById(ada.workspaceId, session!.sessionId))!;
    const recorder = (await startSessionRecording(t.platform.services, record, { width: 80, height: 24 }))!;
    recorder.output(new TextEncoder().encode("x".repeat(10_000)));
    await recorder.close();
    const stored = (await t.storage.recordings.findById(ada.workspaceId, record.id))!;
    expect(stored.truncated).toBe(true);
    expect(stored.sizeBytes).toBeLessThanOrEqual(4096);
    await t.storage.daemonSessions.close(ada.workspaceId, session!.sessionId, "done", t.clock.now());
    // Another recording fills the rest: a recorded session is refused until recordings go.
    const filler = {
      ...stored,
      id: randomUUID(),
      sizeBytes: 0,
      chunkCount: 0,
      complete: false,
      truncated: false,
    };
    await t.storage.recordings.insert(filler);
    await t.storage.recordings.appendChunk(ada.workspaceId, filler.id, {
      seq: 0,
      data: new Uint8Array(4096 - stored.sizeBytes),
    });
    await expectQuota(create(), 4096, "bytes of session recordings", "WAP_WORKSPACE_MAX_RECORDING_BYTES");
  });
});
