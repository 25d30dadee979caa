/**
 * What the audit log says beyond changes: the resource of every entry (in ListAuditLogs and the
 * export), playback of recordings, and security events (failed sign-ins, denied calls) that
 * nobody can use to flood the log.
 */
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  AuthService,
  ExportAuditLogsRequest_Format,
  RecordingService,
  ServiceAccountService,
  UtilService,
} from "@wap/api";
import { createSqliteStorage } from "@wap/storage-sqlite";
import BetterSqlite3 from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createCallContext } from "../src/context.js";
import { startSessionRecording } from "../src/recordings/recorder.js";
import { memberWithRole, type Owner } from "./support/access.js";
import { insertAcceptedDaemon } from "./support/daemons.js";
import { createTestPlatform, expectCode, type TestPlatform } from "./support.js";

const anonymous = { kind: "anonymous" } as const;
let t: TestPlatform;
let ada: Owner;
/** The database under the storage: account-wide entries have no RPC that lists them. */
let database: BetterSqlite3.Database;
beforeEach(async () => {
  database = new BetterSqlite3(":memory:");
  t = await createTestPlatform({
    storage: await createSqliteStorage({ database, strictTransactions: true }),
  });
  ada = await t.owner();
});
afterEach(async () => {
  await t.platform.close();
  database.close();
});

const logs = async (actions: string[], owner: Owner = ada) =>
  (
    await t.call(owner.caller, UtilService.method.listAuditLogs, {
      workspaceId: owner.workspaceId,
      actions,
      limit: 100,
    })
  ).logs;

describe("audit entries name their resource", () => {
  it("in ListAuditLogs and in both export formats", async () => {
    const { serviceAccount } = await t.call(ada.caller, ServiceAccountService.method.createServiceAccount, {
      workspaceId: ada.workspaceId,
      name: "ci",
    });
    const [entry] = await logs(["service_account.create"]);
    expect(entry?.resource).toBe(`service_account:${serviceAccount!.id}`);
    const exported = async (format: ExportAuditLogsRequest_Format) =>
      new TextDecoder().decode(
        (
          await t.call(ada.caller, UtilService.method.exportAuditLogs, {
            workspaceId: ada.workspaceId,
            format,
            startDate: timestampFromDate(new Date(t.clock.now().getTime() - 3_600_000)),
            endDate: timestampFromDate(new Date(t.clock.now().getTime() + 3_600_000)),
          })
        ).data,
      );
    const csv = await exported(ExportAuditLogsRequest_Format.CSV);
    expect(csv.split("\r\n")[0]).toMatch(/,timestamp,resource,actorName,actorEmail,resourceName$/);
    expect(csv).toContain(`,service_account:${serviceAccount!.id},`);
    const json = JSON.parse(await exported(ExportAuditLogsRequest_Format.JSON));
    const rows = Array.isArray(json) ? json : (json.logs ?? json.events ?? []);
    expect(JSON.stringify(rows)).toContain(`"resource":"service_account:${serviceAccount!.id}"`);
  });
});

describe("recording playback is audited", () => {
  it("each GetRecording is an entry naming the recording and who watched it", async () => {
    const daemonId = await insertAcceptedDaemon(t, {
      workspaceId: ada.workspaceId,
      targetId: null,
      name: "web-1",
      recordSessions: true,
    });
    const now = t.clock.now();
    const session = {
      id: crypto.randomUUID(),
      workspaceId: ada.workspaceId,
      daemonId,
      userId: ada.caller.userId,
      username: "ubuntu",
      state: "open" as const,
      createdAt: now,
      openedAt: now,
      closedAt: null,
      closeReason: "",
    };
    await t.storage.daemonSessions.insert(session);
    const recorder = (await startSessionRecording(t.platform.services, session, { width: 80, height: 24 }))!;
    recorder.output(new TextEncoder().encode("secret output"));
    await recorder.close();

    const request = create(RecordingService.method.getRecording.input, {
      workspaceId: ada.workspaceId,
      recordingId: session.id,
    });
    for await (const _ of t.platform.stream(
      RecordingService.method.getRecording,
      createCallContext(ada.caller),
      request,
    )) {
      // read to the end
    }
    const [entry] = await logs(["recording.play"]);
    expect(entry).toMatchObject({ actorId: ada.caller.userId, resource: `recording:${session.id}` });
  });
});

describe("security events", () => {
  it("failed sign-ins are recorded once per window and address; the repeats are counted", async () => {
    const { email } = await t.signUp("grace");
    const fail = (ipAddress: string) =>
      expectCode(
        t.platform.invoke(
          AuthService.method.login,
          createCallContext(anonymous, { ipAddress }),
          create(AuthService.method.login.input, { email, password: "wrong guess" }),
        ),
        "unauthenticated",
      );
    const failures = async () =>
      database
        .prepare(
          "select ip_address as ipAddress, resource, status_code as statusCode from audit_events where action = 'security.sign_in_failed'",
        )
        .all() as Array<{ ipAddress: string; resource: string; statusCode: string }>;
    for (let i = 0; i < 4; i++) await fail("198.51.100.9");
    await fail("203.0.113.5");
    t.clock.advance(61_000);
    await fail("198.51.100.9");
    const rows = await failures();
    expect(rows.map((r) => [r.ipAddress, r.resource, r.statusCode]).sort()).toEqual(
      [
        ["198.51.100.9", `sign_in:password:${email}`, "unauthenticated"],
        ["198.51.100.9", `sign_in:password:${email} repeats=3`, "unauthenticated"],
        ["203.0.113.5", `sign_in:password:${email}`, "unauthenticated"],
      ].sort(),
    );
  });

  it("a member's denied call goes to the workspace's log; an outsider's does not", async () => {
    const viewer = await memberWithRole(t, ada.workspaceId, "viewer");
    await expectCode(
      t.call(viewer.caller, ServiceAccountService.method.createServiceAccount, {
        workspaceId: ada.workspaceId,
        name: "nope",
      }),
      "permission_denied",
    );
    const [entry] = await logs(["security.permission_denied"]);
    expect(entry).toMatchObject({
      actorId: viewer.caller.userId,
      statusCode: "permission_denied",
      resource: "rpc:/platform.v1.ServiceAccountService/CreateServiceAccount",
    });
    const outsider = await t.owner();
    await expectCode(
      t.call(outsider.caller, UtilService.method.listAuditLogs, { workspaceId: ada.workspaceId }),
      "permission_denied",
    ).catch(() => undefined);
    expect((await logs(["security.permission_denied"])).map((l) => l.actorId)).toEqual([
      viewer.caller.userId,
    ]);
  });
});
