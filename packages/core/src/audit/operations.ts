/**
 * UtilService.ListAuditLogs and ExportAuditLogs: a workspace's audit log, filtered and paged,
 * or exported whole for a time window.
 *
 * Windows: `startDate` is inclusive and `endDate` exclusive. Search is a substring match that
 * folds ASCII letters only (the same on every storage engine). An export with no `endDate` ends
 * at the time of the call, so it is a stable snapshot. FORMAT_UNSPECIFIED exports CSV.
 *
 * @module
 */
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { ExportAuditLogsRequest_Format, ExportAuditLogsRequest_FormatSchema, UtilService } from "@wap/api";
import * as z from "zod";
import { InvalidArgumentError } from "../errors.js";
import { integrationsOf } from "../operations/integrations.js";
import { defineOperation } from "../operations/operation.js";
import type { AuditEventRecord } from "../storage/audit.js";
import { defaultPage, enumValue, paging, text, timestamp, uuid } from "../validation/rules.js";
import { exportAuditLog } from "./export.js";
import { type AuditNames, createAuditNamer } from "./names.js";

/**
 * Server limits on the filters (the contract sets none): enough for any screen, small enough
 * that a query string cannot become an expensive query.
 */
export const auditFilterLimits = { search: 256, listItems: 100, item: 256 } as const;

const filterList = <T extends z.ZodType>(item: T) =>
  z.array(item).max(auditFilterLimits.listItems, `must have at most ${auditFilterLimits.listItems} items`);

/** A window whose start is not after its end. */
function checkWindow(
  input: { startDate?: Date | undefined; endDate?: Date | undefined },
  ctx: z.RefinementCtx,
) {
  if (input.startDate && input.endDate && input.startDate.getTime() > input.endDate.getTime()) {
    ctx.addIssue({ code: "custom", path: ["endDate"], message: "must not be before startDate" });
  }
}

export const listAuditLogsInput = z
  .object({
    workspaceId: uuid.optional(),
    ...paging,
    search: text({ max: auditFilterLimits.search }).optional(),
    actorIds: filterList(uuid).default([]),
    actorTypes: filterList(text({ max: auditFilterLimits.item })).default([]),
    actions: filterList(text({ max: auditFilterLimits.item })).default([]),
    resources: filterList(text({ max: auditFilterLimits.item })).default([]),
    startDate: timestamp.optional(),
    endDate: timestamp.optional(),
  })
  .superRefine(checkWindow);

export const exportAuditLogsInput = z
  .object({
    workspaceId: uuid.optional(),
    format: enumValue(ExportAuditLogsRequest_FormatSchema, { definedOnly: true }).optional(),
    startDate: timestamp.optional(),
    endDate: timestamp.optional(),
  })
  .superRefine(checkWindow);

function toEventLog(e: AuditEventRecord, names: AuditNames) {
  return {
    ...names,
    id: e.id,
    workspaceId: e.workspaceId ?? "",
    actorId: e.actorId,
    actorType: e.actorType,
    action: e.action,
    ipAddress: e.ipAddress,
    userAgent: e.userAgent,
    statusCode: e.statusCode,
    timestamp: timestampFromDate(e.timestamp),
    resource: e.resource,
  };
}

export const listAuditLogs = defineOperation({
  method: UtilService.method.listAuditLogs,
  access: { kind: "workspace", permission: "audit.read" },
  input: listAuditLogsInput,
  async run({ input, services, workspace }) {
    const page = await services.storage.auditEvents.list(workspace.workspaceId, {
      limit: input.limit ?? defaultPage.limit,
      offset: input.offset ?? defaultPage.offset,
      ...(input.search ? { search: input.search } : {}),
      actorIds: input.actorIds,
      actorTypes: input.actorTypes,
      actions: input.actions,
      resources: input.resources,
      ...(input.startDate ? { since: input.startDate } : {}),
      ...(input.endDate ? { until: input.endDate } : {}),
    });
    const namer = createAuditNamer(services.storage, workspace.workspaceId);
    const logs = await Promise.all(page.items.map(async (e) => toEventLog(e, await namer(e))));
    return { logs, total: page.total };
  },
});

/** `20261121T120000Z` */
function compactTime(date: Date): string {
  return date
    .toISOString()
    .replace(/\.\d+Z$/, "Z")
    .replace(/[-:]/g, "");
}

export const exportAuditLogs = defineOperation({
  method: UtilService.method.exportAuditLogs,
  access: { kind: "workspace", permission: "audit.read" },
  input: exportAuditLogsInput,
  async run(call) {
    const { input, services, workspace, now } = call;
    const format = input.format === ExportAuditLogsRequest_Format.JSON ? "json" : "csv";
    const until = input.endDate ?? now;
    if (input.startDate && input.startDate.getTime() > until.getTime()) {
      throw new InvalidArgumentError("invalid request: startDate: must not be in the future", {
        violations: [{ field: "startDate", description: "must not be in the future" }],
      });
    }
    const result = await exportAuditLog(
      services.storage,
      workspace.workspaceId,
      { ...(input.startDate ? { since: input.startDate } : {}), until },
      format,
      integrationsOf(services).auditExport,
      createAuditNamer(services.storage, workspace.workspaceId),
    );
    // Reading the audit log is itself worth an entry.
    await services.storage.transaction((tx) =>
      call.audit(tx, { action: "audit.export", resource: `audit_export:${format}:${result.rows}` }),
    );
    const from = input.startDate ? compactTime(input.startDate) : "start";
    return {
      data: result.data,
      filename: `audit-${workspace.workspaceId}-${from}-${compactTime(until)}.${result.extension}`,
      contentType: result.contentType,
    };
  },
});

export const auditOperations = [listAuditLogs, exportAuditLogs];
