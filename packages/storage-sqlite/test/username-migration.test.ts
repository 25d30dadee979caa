import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { migrationTableName, UsernameCaseClashError } from "@wap/storage-sql";
import { createSqliteStorage } from "@wap/storage-sqlite";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";

const dir = mkdtempSync(join(tmpdir(), "wap-sqlite-usernames-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("011_account_security on SQLite", () => {
  it("names the accounts whose usernames differ only in case instead of failing obscurely", async () => {
    const filename = join(dir, `${randomUUID()}.db`);
    await (await createSqliteStorage({ filename })).close();
    // A database from before the rule: what 011 adds and the records from 011 on are not there yet.
    const raw = new Database(filename);
    raw.exec(
      "drop index users_username_lower_key; drop index cli_logins_address_idx; drop index daemon_sessions_workspace_state_idx",
    );
    for (const column of ["user_code_hash", "code_failures", "denied_at", "client_os", "client_version"]) {
      raw.exec(`alter table cli_logins drop column ${column}`);
    }
    // The migrations after it go too: Kysely applies only a history without gaps.
    raw.exec("alter table targets drop column reported_endpoints");
    raw.exec(
      "drop table audit_chain_heads; drop table audit_checkpoints; drop table audit_signing_keys; drop index audit_events_chain_key",
    );
    for (const column of ["chain_position", "previous_hash", "hash"])
      raw.exec(`alter table audit_events drop column ${column}`);
    raw.exec("drop table webhook_deliveries; drop table webhook_secrets; drop table webhook_endpoints");
    raw.exec("drop table ssh_sessions; alter table daemons drop column require_recording");
    raw.exec("drop table access_requests; drop index principal_subjects_valid_until_idx");
    for (const column of ["grant_kind", "valid_until", "approval_policy", "limits"]) {
      raw.exec(`alter table principal_subjects drop column ${column}`);
    }
    raw.exec(
      "alter table issued_certificates drop column limits; alter table issued_certificates drop column single_use; drop table ssh_step_up_certificates; drop table ssh_step_ups; alter table issued_certificates drop column step_up_id",
    );
    raw.prepare(`delete from ${migrationTableName} where name >= '011_account_security'`).run();
    const insert = raw.prepare(
      "insert into users (id, name, username, email, email_verified, picture, password_hash, enable_email_recovery, created_at, updated_at) values (?, 'n', ?, ?, 0, '', null, 0, 0, 0)",
    );
    const [a, b] = [randomUUID(), randomUUID()];
    insert.run(a, "Ada", "ada1@example.com");
    insert.run(b, "ada", "ada2@example.com");
    insert.run(randomUUID(), "grace", "grace@example.com");
    raw.close();

    const error = await createSqliteStorage({ filename }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UsernameCaseClashError);
    expect((error as UsernameCaseClashError).clashes.map((c) => c.id).sort()).toEqual([a, b].sort());
    expect((error as Error).message).toMatch(
      /unique whatever their case.*(Ada|ada) \(user .*(Ada|ada) \(user .*UPDATE users/,
    );

    // Renamed, the migration goes through and the rule holds from then on.
    const fix = new Database(filename);
    fix.prepare("update users set username = 'ada-two' where id = ?").run(b);
    fix.close();
    const storage = await createSqliteStorage({ filename });
    try {
      expect((await storage.users.findByUsername("ADA"))?.id).toBe(a);
    } finally {
      await storage.close();
    }
  });
});
