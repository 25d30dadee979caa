/**
 * Access requests (`access_requests`): the policy and transitions are JSON columns; updates are
 * conditional on the version read.
 *
 * @module
 */
import type {
  AccessRequestEventRecord,
  AccessRequestRecord,
  AccessRequestRepository,
  AccessRequestState,
  ApprovalPolicy,
} from "@wap/core/storage";
import type { Selectable } from "kysely";
import { fromDate, fromDateOrNull, toDate, toDateOrNull, toJson, toNumber } from "../lib/mapping.js";
import type { QueryRunner } from "../repositories.js";
import type { AccessRequestsTable } from "../schema-workspace-access.js";

type StoredEvent = Omit<AccessRequestEventRecord, "at"> & { at: number };

function toRecord(r: Selectable<AccessRequestsTable>): AccessRequestRecord {
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    targetId: r.target_id,
    login: r.login,
    requesterId: r.requester_id,
    reason: r.reason,
    durationSeconds: toNumber(r.duration_seconds),
    state: r.state as AccessRequestState,
    policy: JSON.parse(r.policy) as ApprovalPolicy,
    createdAt: toDate(r.created_at),
    decideBy: toDate(r.decide_by),
    approvedAt: toDateOrNull(r.approved_at),
    endsAt: toDateOrNull(r.ends_at),
    events: (JSON.parse(r.events) as StoredEvent[]).map((e) => ({ ...e, at: new Date(e.at) })),
    version: r.version,
  };
}

function toRow(r: AccessRequestRecord) {
  return {
    id: r.id,
    workspace_id: r.workspaceId,
    target_id: r.targetId,
    login: r.login,
    requester_id: r.requesterId,
    reason: r.reason,
    duration_seconds: r.durationSeconds,
    state: r.state,
    policy: toJson(r.policy),
    events: toJson(r.events.map((e) => ({ ...e, at: e.at.getTime() }))),
    created_at: fromDate(r.createdAt),
    decide_by: fromDate(r.decideBy),
    approved_at: fromDateOrNull(r.approvedAt),
    ends_at: fromDateOrNull(r.endsAt),
    version: r.version,
  };
}

export function createAccessRequestRepository(run: QueryRunner): AccessRequestRepository {
  return {
    async insert(request) {
      await run.write((db) => db.insertInto("access_requests").values(toRow(request)).execute());
    },
    async findById(workspaceId, id) {
      const row = await run.read((db) =>
        db
          .selectFrom("access_requests")
          .selectAll()
          .where("workspace_id", "=", workspaceId)
          .where("id", "=", id)
          .executeTakeFirst(),
      );
      return row ? toRecord(row) : null;
    },
    async update(request) {
      const { id, workspace_id, ...changes } = toRow(request);
      const result = await run.write((db) =>
        db
          .updateTable("access_requests")
          .set(changes)
          .where("workspace_id", "=", workspace_id)
          .where("id", "=", id)
          .where("version", "=", request.version - 1)
          .executeTakeFirst(),
      );
      return Number(result.numUpdatedRows) === 1;
    },
    async listByWorkspace(workspaceId) {
      const rows = await run.read((db) =>
        db
          .selectFrom("access_requests")
          .selectAll()
          .where("workspace_id", "=", workspaceId)
          .orderBy("created_at", "desc")
          .orderBy("id", "desc")
          .execute(),
      );
      return rows.map(toRecord);
    },
    async activeOn(workspaceId, targetId, at) {
      const rows = await run.read((db) =>
        db
          .selectFrom("access_requests")
          .selectAll()
          .where("workspace_id", "=", workspaceId)
          .where("target_id", "=", targetId)
          .where("state", "=", "approved")
          .where("ends_at", ">", fromDate(at))
          .orderBy("created_at")
          .execute(),
      );
      return rows.map(toRecord);
    },
    async due(at) {
      const now = fromDate(at);
      const rows = await run.read((db) =>
        db
          .selectFrom("access_requests")
          .selectAll()
          .where((eb) =>
            eb.or([
              eb.and([eb("state", "=", "pending"), eb("decide_by", "<=", now)]),
              eb.and([eb("state", "=", "approved"), eb("ends_at", "<=", now)]),
            ]),
          )
          .orderBy("created_at")
          .execute(),
      );
      return rows.map(toRecord);
    },
  };
}
