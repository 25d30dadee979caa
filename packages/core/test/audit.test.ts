/**
 * UtilService.ListAuditLogs (filters, paging, access) and ExportAuditLogs (CSV and JSON files
 * of a time window, built page by page; size limits refused with resource_exhausted).
 */
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  CertificateKeyType,
  CertificateService,
  ExportAuditLogsRequest_Format,
  TargetService,
  UtilService,
} from "@wap/api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exportAuditLog } from "../src/audit/export.js";
import type { AuditEventRecord } from "../src/storage/audit.js";
import { addMember, useIntegrations } from "./support/enterprise.js";
import { createTestPlatform, expectCode, type TestPlatform } from "./support.js";

let t: TestPlatform;
beforeAll(async () => {
  t = await createTestPlatform();
});
afterAll(() => t.platform.close());

const base = new Date("2026-01-01T00:00:00Z").getTime();
const at = (minutes: number) => new Date(base + minutes * 60_000);

function anEvent(
  workspaceId: string,
  minutes: number,
  overrides: Partial<AuditEventRecord> = {},
): AuditEventRecord {
  return {
    id: crypto.randomUUID(),
    workspaceId,
    actorId: crypto.randomUUID(),
    actorType: "user",
    action: "target.create",
    resource: `target:${crypto.randomUUID()}`,
    ipAddress: "192.0.2.10",
    userAgent: "curl/8.5.0",
    statusCode: "ok",
    requestId: crypto.randomUUID(),
    timestamp: at(minutes),
    ...overrides,
  };
}

/** RFC 4180: quoted fields may hold commas, doubled quotes and line breaks. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") {
      row.push(field);
      field = "";
    } else if (c === "\r" && text[i + 1] === "\n") {
      row.push(field);
      rows.push(row);
      row = [];
      field = "";
      i++;
    } else field += c;
  }
  if (field !== "" || row.length > 0) throw new Error("the CSV does not end with CRLF");
  return rows;
}

describe("ListAuditLogs", () => {
  it("filters by search, actors, actor types, actions and dates; pages with the total", async () => {
    const owner = await t.owner();
    const ws = owner.workspaceId;
    const alice = crypto.randomUUID();
    const bot = crypto.randomUUID();
    const events = [
      anEvent(ws, 1, { actorId: alice, action: "target.create" }),
      anEvent(ws, 2, { actorId: alice, action: "target.delete", userAgent: "Mozilla/5.0 Firefox" }),
      anEvent(ws, 3, { actorId: bot, actorType: "service_account", action: "certificate.sign_ssh" }),
      anEvent(ws, 4, {
        actorId: bot,
        actorType: "service_account",
        action: "certificate.sign_ssh",
        ipAddress: "2001:db8::7",
      }),
      anEvent(ws, 5, { actorType: "daemon", action: "daemon.sync" }),
    ];
    for (const e of events) await t.storage.auditEvents.append(e);
    const other = await t.owner();
    await t.storage.auditEvents.append(anEvent(other.workspaceId, 3, { actorId: alice }));

    const list = async (request: Record<string, unknown>) => {
      const res = await t.call(owner.caller, UtilService.method.listAuditLogs, {
        workspaceId: ws,
        ...request,
      });
      return { ids: res.logs.map((l) => l.id), total: res.total };
    };
    const ids = (...indexes: number[]) => indexes.map((i) => events[i]!.id);
    const window = { startDate: timestampFromDate(at(1)), endDate: timestampFromDate(at(6)) };
    // Newest first; the workspace's own creation entry is outside the window.
    expect(await list(window)).toEqual({ ids: ids(4, 3, 2, 1, 0), total: 5 });
    expect(await list({ ...window, limit: 2, offset: 1 })).toEqual({ ids: ids(3, 2), total: 5 });
    expect(await list({ actorIds: [alice] })).toEqual({ ids: ids(1, 0), total: 2 });
    expect(await list({ actorIds: [alice, bot.toUpperCase()] })).toEqual({ ids: ids(3, 2, 1, 0), total: 4 });
    expect(await list({ actorTypes: ["service_account", "daemon"] })).toEqual({
      ids: ids(4, 3, 2),
      total: 3,
    });
    expect(await list({ actions: ["target.delete", "daemon.sync"] })).toEqual({ ids: ids(4, 1), total: 2 });
    expect(await list({ search: "FIREFOX" })).toEqual({ ids: ids(1), total: 1 });
    expect(await list({ search: "db8::7" })).toEqual({ ids: ids(3), total: 1 });
    expect(await list({ startDate: timestampFromDate(at(2)), endDate: timestampFromDate(at(4)) })).toEqual({
      ids: ids(2, 1),
      total: 2,
    });
    const [first] = (
      await t.call(owner.caller, UtilService.method.listAuditLogs, {
        workspaceId: ws,
        actions: ["daemon.sync"],
      })
    ).logs;
    expect(first).toMatchObject({
      id: events[4]!.id,
      workspaceId: ws,
      actorId: events[4]!.actorId,
      actorType: "daemon",
      action: "daemon.sync",
      ipAddress: "192.0.2.10",
      userAgent: "curl/8.5.0",
      statusCode: "ok",
    });
    expect(timestampDate(first!.timestamp!)).toEqual(at(5));
  });

  it("is for admins and owners; start after end is invalid", async () => {
    const owner = await t.owner();
    const ws = { workspaceId: owner.workspaceId };
    const admin = await t.signUp();
    const editor = await t.signUp();
    await addMember(t.storage, owner.workspaceId, admin.caller.userId, "admin");
    await addMember(t.storage, owner.workspaceId, editor.caller.userId, "editor");
    await t.call(admin.caller, UtilService.method.listAuditLogs, ws);
    await t.call(admin.caller, UtilService.method.exportAuditLogs, ws);
    await expectCode(t.call(editor.caller, UtilService.method.listAuditLogs, ws), "permission_denied");
    await expectCode(t.call(editor.caller, UtilService.method.exportAuditLogs, ws), "permission_denied");
    const error = await expectCode(
      t.call(owner.caller, UtilService.method.listAuditLogs, {
        ...ws,
        startDate: timestampFromDate(at(2)),
        endDate: timestampFromDate(at(1)),
      }),
      "invalid_argument",
    );
    expect(error.violations.map((v) => v.field)).toEqual(["endDate"]);
  });
});

describe("names beside the ids", () => {
  it("lists and exports the actor's name and email and the resource's name, and filters by resource", async () => {
    const owner = await t.owner();
    const ws = owner.workspaceId;
    const { certificateAuthority: ca } = await t.call(
      owner.caller,
      CertificateService.method.createCertificateAuthority,
      { workspaceId: ws, name: "ssh-users", keyType: CertificateKeyType.ED25519 },
    );
    const { target } = await t.call(owner.caller, TargetService.method.createTarget, {
      workspaceId: ws,
      name: "web-1",
    });
    const { logs } = await t.call(owner.caller, UtilService.method.listAuditLogs, {
      workspaceId: ws,
      resources: [`target:${target!.id}`, `certificate_authority:${ca!.id}`],
    });
    expect(logs.map((l) => [l.action, l.actorName, l.actorEmail, l.resourceName])).toEqual([
      ["target.create", `${owner.email.split("@")[0]} Test`, owner.email, "web-1"],
      ["certificate_authority.create", `${owner.email.split("@")[0]} Test`, owner.email, "ssh-users"],
    ]);
    const workspaceCreated = await t.call(owner.caller, UtilService.method.listAuditLogs, {
      workspaceId: ws,
      resources: [`workspace:${ws}`],
    });
    expect(workspaceCreated.logs[0]?.resourceName).toBe(`ws of ${owner.email}`);

    const res = await t.call(owner.caller, UtilService.method.exportAuditLogs, {
      workspaceId: ws,
      // The window's end is exclusive: past the entries written at the fixed clock's time.
      endDate: timestampFromDate(new Date(t.clock.now().getTime() + 60_000)),
    });
    const rows = parseCsv(Buffer.from(res.data).toString("utf8"));
    const targetRow = rows.find((r) => r[9] === `target:${target!.id}`);
    expect(targetRow?.slice(10)).toEqual([`${owner.email.split("@")[0]} Test`, owner.email, "web-1"]);
  });

  it("refuses more than 100 resources, or one over 256 characters, naming the field", async () => {
    const owner = await t.owner();
    const many = await expectCode(
      t.call(owner.caller, UtilService.method.listAuditLogs, {
        workspaceId: owner.workspaceId,
        resources: Array.from({ length: 101 }, (_, i) => `target:${i}`),
      }),
      "invalid_argument",
    );
    expect(many.violations.map((v) => v.field)).toEqual(["resources"]);
    const long = await expectCode(
      t.call(owner.caller, UtilService.method.listAuditLogs, {
        workspaceId: owner.workspaceId,
        resources: ["x".repeat(257)],
      }),
      "invalid_argument",
    );
    expect(long.violations[0]?.field).toMatch(/^resources/);
  });
});

describe("ExportAuditLogs", () => {
  it("exports a window as CSV (the default) oldest first, quoting and defusing fields", async () => {
    const owner = await t.owner();
    const ws = owner.workspaceId;
    const tricky = anEvent(ws, 2, { userAgent: 'Agent "X", v2\r\nnext line', action: '=HYPERLINK("x")' });
    const events = [anEvent(ws, 1), tricky, anEvent(ws, 3, { workspaceId: ws, ipAddress: "-1+1" })];
    for (const e of [...events].reverse()) await t.storage.auditEvents.append(e);
    await t.storage.auditEvents.append(anEvent(ws, 10));
    const window = {
      workspaceId: ws,
      startDate: timestampFromDate(at(1)),
      endDate: timestampFromDate(at(10)),
    };
    for (const format of [
      undefined,
      ExportAuditLogsRequest_Format.UNSPECIFIED,
      ExportAuditLogsRequest_Format.CSV,
    ]) {
      const res = await t.call(owner.caller, UtilService.method.exportAuditLogs, {
        ...window,
        ...(format === undefined ? {} : { format }),
      });
      expect(res.contentType).toBe("text/csv; charset=utf-8");
      expect(res.filename).toBe(`audit-${ws}-20260101T000100Z-20260101T001000Z.csv`);
      const rows = parseCsv(Buffer.from(res.data).toString("utf8"));
      expect(rows[0]).toEqual([
        "id",
        "workspaceId",
        "actorId",
        "actorType",
        "action",
        "ipAddress",
        "userAgent",
        "statusCode",
        "timestamp",
        "resource",
        "actorName",
        "actorEmail",
        "resourceName",
      ]);
      expect(rows.slice(1).map((r) => r[0])).toEqual(events.map((e) => e.id));
      expect(rows[2]).toEqual([
        tricky.id,
        ws,
        tricky.actorId,
        "user",
        '\'=HYPERLINK("x")',
        "192.0.2.10",
        'Agent "X", v2\r\nnext line',
        "ok",
        "2026-01-01T00:02:00.000Z",
        tricky.resource,
        // Nobody and nothing of the workspace has these ids: no names.
        "",
        "",
        "",
      ]);
      expect(rows[3]![5]).toBe("'-1+1");
    }
  });

  it("exports JSON: an array of EventLog objects; records the export in the audit log", async () => {
    const owner = await t.owner();
    const ws = owner.workspaceId;
    const events = [anEvent(ws, 1), anEvent(ws, 2, { userAgent: "ünïcødé 🚀" })];
    for (const e of events) await t.storage.auditEvents.append(e);
    const res = await t.call(owner.caller, UtilService.method.exportAuditLogs, {
      workspaceId: ws,
      format: ExportAuditLogsRequest_Format.JSON,
      startDate: timestampFromDate(at(0)),
      endDate: timestampFromDate(at(3)),
    });
    expect(res.contentType).toBe("application/json");
    expect(res.filename.endsWith(".json")).toBe(true);
    expect(JSON.parse(Buffer.from(res.data).toString("utf8"))).toEqual(
      events.map((e) => ({
        id: e.id,
        workspaceId: ws,
        actorId: e.actorId,
        actorType: e.actorType,
        action: e.action,
        ipAddress: e.ipAddress,
        userAgent: e.userAgent,
        statusCode: e.statusCode,
        timestamp: e.timestamp.toISOString(),
        resource: e.resource,
        actorName: "",
        actorEmail: "",
        resourceName: "",
      })),
    );
    const empty = await t.call(owner.caller, UtilService.method.exportAuditLogs, {
      workspaceId: ws,
      format: ExportAuditLogsRequest_Format.JSON,
      endDate: timestampFromDate(at(-1)),
    });
    expect(JSON.parse(Buffer.from(empty.data).toString("utf8"))).toEqual([]);
    const { logs } = await t.call(owner.caller, UtilService.method.listAuditLogs, {
      workspaceId: ws,
      actions: ["audit.export"],
    });
    expect(logs).toHaveLength(2);
    expect(logs[1]).toMatchObject({ actorId: owner.caller.userId, actorType: "user" });
  });

  it("without an end date it stops at the time of the call; a start in the future is invalid", async () => {
    const owner = await t.owner();
    const ws = owner.workspaceId;
    const now = t.clock.now();
    const past = anEvent(ws, 0, { timestamp: new Date(now.getTime() - 1000) });
    const future = anEvent(ws, 0, { timestamp: new Date(now.getTime() + 1000) });
    await t.storage.auditEvents.append(past);
    await t.storage.auditEvents.append(future);
    const res = await t.call(owner.caller, UtilService.method.exportAuditLogs, { workspaceId: ws });
    const ids = parseCsv(Buffer.from(res.data).toString("utf8")).map((r) => r[0]);
    expect(ids).toContain(past.id);
    expect(ids).not.toContain(future.id);
    await expectCode(
      t.call(owner.caller, UtilService.method.exportAuditLogs, {
        workspaceId: ws,
        startDate: timestampFromDate(new Date(now.getTime() + 60_000)),
      }),
      "invalid_argument",
    );
    await expectCode(
      t.call(owner.caller, UtilService.method.exportAuditLogs, {
        workspaceId: ws,
        format: 3 as ExportAuditLogsRequest_Format,
      }),
      "invalid_argument",
    );
  });

  it("refuses windows over the row or byte limit with resource_exhausted, before building them", async () => {
    const owner = await t.owner();
    const ws = owner.workspaceId;
    for (let i = 0; i < 6; i++) await t.storage.auditEvents.append(anEvent(ws, i));
    const request = {
      workspaceId: ws,
      startDate: timestampFromDate(at(0)),
      endDate: timestampFromDate(at(10)),
    };
    useIntegrations(t.platform, { auditExport: { maxRows: 5 } });
    try {
      const error = await expectCode(
        t.call(owner.caller, UtilService.method.exportAuditLogs, request),
        "resource_exhausted",
      );
      expect(error.reason).toBe("AUDIT_EXPORT_TOO_LARGE");
      expect(error.message).toContain("6 events");
      useIntegrations(t.platform, { auditExport: { maxBytes: 1000 } });
      await expectCode(
        t.call(owner.caller, UtilService.method.exportAuditLogs, request),
        "resource_exhausted",
      );
      useIntegrations(t.platform, { auditExport: { maxRows: 6, maxBytes: 100_000, pageSize: 4 } });
      const res = await t.call(owner.caller, UtilService.method.exportAuditLogs, request);
      expect(parseCsv(Buffer.from(res.data).toString("utf8"))).toHaveLength(7);
    } finally {
      useIntegrations(t.platform, { auditExport: {} });
    }
  });

  it("builds the same file page by page as in one go (many pages, buffer growth)", async () => {
    const owner = await t.owner();
    const ws = owner.workspaceId;
    const events: AuditEventRecord[] = [];
    await t.storage.transaction(async (tx) => {
      for (let i = 0; i < 5000; i++) {
        // Widely varying row sizes make the first page a poor size estimate.
        const e = anEvent(ws, 100 + Math.floor(i / 7), {
          userAgent: "x".repeat(i < 500 ? 5 : (i % 400) + 1),
        });
        events.push(e);
        await tx.auditEvents.append(e);
      }
    });
    const window = { since: at(100), until: at(10_000) };
    const csv = await exportAuditLog(t.storage, ws, window, "csv", { pageSize: 333 });
    const json = await exportAuditLog(t.storage, ws, window, "json", { pageSize: 333 });
    expect([csv.rows, json.rows]).toEqual([5000, 5000]);
    const parsed = JSON.parse(Buffer.from(json.data).toString("utf8")) as Array<{
      id: string;
      userAgent: string;
    }>;
    expect(parsed.map((e) => e.id)).toEqual(events.map((e) => e.id));
    expect(parsed.map((e) => e.userAgent)).toEqual(events.map((e) => e.userAgent));
    const rows = parseCsv(Buffer.from(csv.data).toString("utf8"));
    expect(rows.slice(1).map((r) => r[0])).toEqual(events.map((e) => e.id));
    expect(json.data.byteLength).toBe(Buffer.byteLength(Buffer.from(json.data).toString("utf8")));
  });
});
