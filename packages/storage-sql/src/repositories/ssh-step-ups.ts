/**
 * SSH step-ups (`ssh_step_ups`) and the logins signed under them (`ssh_step_up_certificates`):
 * completion is a conditional update, each login's claim an insert on the primary key.
 *
 * @module
 */
import type { SshStepUpRecord, SshStepUpRepository, StepUpTarget } from "@wap/core/storage";
import type { Selectable } from "kysely";
import { fromDate, fromDateOrNull, toDate, toDateOrNull, toJson } from "../lib/mapping.js";
import type { QueryRunner } from "../repositories.js";
import type { SshStepUpsTable } from "../schema-accounts.js";

function toRecord(r: Selectable<SshStepUpsTable>): SshStepUpRecord {
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    userId: r.user_id,
    targets: JSON.parse(r.targets) as StepUpTarget[],
    challenge: r.challenge,
    createdAt: toDate(r.created_at),
    expiresAt: toDate(r.expires_at),
    completedAt: toDateOrNull(r.completed_at),
    passkeyId: r.passkey_id,
  };
}

export function createSshStepUpRepository(run: QueryRunner): SshStepUpRepository {
  return {
    async insert(record) {
      await run.write((db) =>
        db
          .insertInto("ssh_step_ups")
          .values({
            id: record.id,
            workspace_id: record.workspaceId,
            user_id: record.userId,
            targets: toJson(record.targets.map(({ targetId, login }) => ({ targetId, login }))),
            challenge: record.challenge,
            created_at: fromDate(record.createdAt),
            expires_at: fromDate(record.expiresAt),
            completed_at: fromDateOrNull(record.completedAt),
            passkey_id: record.passkeyId,
          })
          .execute(),
      );
    },
    async findById(workspaceId, id) {
      return run.read(async (db) => {
        const row = await db
          .selectFrom("ssh_step_ups")
          .selectAll()
          .where("workspace_id", "=", workspaceId)
          .where("id", "=", id)
          .executeTakeFirst();
        if (!row) return null;
        const signed = await db
          .selectFrom("ssh_step_up_certificates")
          .select(["target_id", "login"])
          .where("step_up_id", "=", id)
          .execute();
        return { ...toRecord(row), signed: signed.map((s) => ({ targetId: s.target_id, login: s.login })) };
      });
    },
    async complete(workspaceId, id, passkeyId, at, expiresAt) {
      const result = await run.write((db) =>
        db
          .updateTable("ssh_step_ups")
          .set({ completed_at: fromDate(at), passkey_id: passkeyId, expires_at: fromDate(expiresAt) })
          .where("workspace_id", "=", workspaceId)
          .where("id", "=", id)
          .where("completed_at", "is", null)
          .where("expires_at", ">", fromDate(at))
          .executeTakeFirst(),
      );
      return Number(result.numUpdatedRows) === 1;
    },
    async claimTarget(workspaceId, id, target, certificateId) {
      return run.write(async (db) => {
        const owner = await db
          .selectFrom("ssh_step_ups")
          .select("id")
          .where("workspace_id", "=", workspaceId)
          .where("id", "=", id)
          .executeTakeFirst();
        if (!owner) return false;
        const inserted = await db
          .insertInto("ssh_step_up_certificates")
          .values({
            step_up_id: id,
            target_id: target.targetId,
            login: target.login,
            certificate_id: certificateId,
          })
          .onConflict((oc) => oc.columns(["step_up_id", "target_id", "login"]).doNothing())
          .executeTakeFirst();
        return (inserted.numInsertedOrUpdatedRows ?? 0n) > 0n;
      });
    },
    async deleteExpired(before) {
      await run.write((db) =>
        db.deleteFrom("ssh_step_ups").where("expires_at", "<", fromDate(before)).execute(),
      );
    },
  };
}
