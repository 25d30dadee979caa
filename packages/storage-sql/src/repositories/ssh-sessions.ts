/**
 * SSH logins through sshd (`ssh_sessions`), registered by the daemons' agents.
 *
 * @module
 */
import type { SshSessionKind, SshSessionRecord, SshSessionRepository } from "@wap/core/storage";
import type { Insertable, Selectable } from "kysely";
import {
  fromDate,
  fromDateOrNull,
  fromFlag,
  toDate,
  toDateOrNull,
  toFlag,
  toNumber,
} from "../lib/mapping.js";
import { findInWorkspace } from "../lib/scoped.js";
import type { QueryRunner } from "../repositories.js";
import type { SshSessionsTable } from "../schema-daemons.js";

function sshSessionToRow(s: SshSessionRecord): Insertable<SshSessionsTable> {
  return {
    id: s.id,
    workspace_id: s.workspaceId,
    daemon_id: s.daemonId,
    subject_id: s.subjectId,
    subject_type: s.subjectType,
    username: s.username,
    ca_id: s.caId,
    certificate_serial: s.certificateSerial,
    key_id: s.keyId,
    client_address: s.clientAddress,
    kind: s.kind,
    command: s.command,
    tty: toFlag(s.tty),
    recorded: toFlag(s.recorded),
    started_at: fromDate(s.startedAt),
    ended_at: fromDateOrNull(s.endedAt),
    exit_status: s.exitStatus,
    bytes_in: s.bytesIn,
    bytes_out: s.bytesOut,
    ended_by: s.endedBy,
    end_reason: s.endReason,
  };
}

function rowToSshSession(r: Selectable<SshSessionsTable>): SshSessionRecord {
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    daemonId: r.daemon_id,
    subjectId: r.subject_id,
    subjectType: r.subject_type as SshSessionRecord["subjectType"],
    username: r.username,
    caId: r.ca_id,
    certificateSerial: r.certificate_serial,
    keyId: r.key_id,
    clientAddress: r.client_address,
    kind: r.kind as SshSessionKind,
    command: r.command,
    tty: fromFlag(r.tty),
    recorded: fromFlag(r.recorded),
    startedAt: toDate(r.started_at),
    endedAt: toDateOrNull(r.ended_at),
    exitStatus: r.exit_status === null ? null : toNumber(r.exit_status),
    bytesIn: toNumber(r.bytes_in),
    bytesOut: toNumber(r.bytes_out),
    endedBy: r.ended_by,
    endReason: r.end_reason,
  };
}

export function createSshSessionRepository(run: QueryRunner): SshSessionRepository {
  return {
    async insert(session) {
      await run.write((db) => db.insertInto("ssh_sessions").values(sshSessionToRow(session)).execute());
    },
    async findById(workspaceId, id) {
      const row = await run.read((db) => findInWorkspace(db, "ssh_sessions", workspaceId, id));
      return row ? rowToSshSession(row) : null;
    },
    async listLiveByDaemon(workspaceId, daemonId) {
      const rows = await run.read((db) =>
        db
          .selectFrom("ssh_sessions")
          .selectAll()
          .where("workspace_id", "=", workspaceId)
          .where("daemon_id", "=", daemonId)
          .where("ended_at", "is", null)
          .orderBy("started_at")
          .orderBy("id")
          .execute(),
      );
      return rows.map(rowToSshSession);
    },
    async end(workspaceId, id, end) {
      const row = await run.write((db) =>
        db
          .updateTable("ssh_sessions")
          .set({
            ended_at: fromDate(end.at),
            exit_status: end.exitStatus,
            bytes_in: end.bytesIn,
            bytes_out: end.bytesOut,
            ended_by: end.endedBy,
            end_reason: end.reason,
          })
          .where("workspace_id", "=", workspaceId)
          .where("id", "=", id)
          .where("ended_at", "is", null)
          .returningAll()
          .executeTakeFirst(),
      );
      return row ? rowToSshSession(row) : null;
    },
  };
}
