import { randomUUID } from "node:crypto";
import { StorageUnavailableError } from "@wap/core/storage";
import { runStorageContract } from "@wap/core/testing";
import { createPostgresStorage, SchemaVersionError } from "@wap/storage-postgres";
import { freePort, startTestPostgres, type TestPostgres } from "@wap/storage-postgres/testing";
import { createMigrations, UsernameCaseClashError } from "@wap/storage-sql";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

let pgServer: TestPostgres;
let url = "";
const freshSchema = () => pgServer.freshSchema();
const admin = <T>(fn: (client: pg.Client) => Promise<T>) => pgServer.admin(fn);
const external = process.env.WAP_TEST_DATABASE_URL;

beforeAll(async () => {
  pgServer = await startTestPostgres();
  url = await freshSchema();
}, 120_000);

afterAll(() => pgServer?.stop(), 60_000);

runStorageContract({
  name: external ? "postgres (WAP_TEST_DATABASE_URL)" : "postgres (embedded)",
  create: () => createPostgresStorage({ connectionString: url, strictTransactions: true }),
});

describe("postgres adapter", () => {
  it("starts while another installation's schema is dropped in the same database", async () => {
    // Kysely's Migrator introspects every schema; a drop elsewhere used to fail our start.
    let churning = true;
    const tables = Array.from(
      { length: 20 },
      (_, i) => `create table %s.t${i} (id int primary key, v text);`,
    );
    const churner = async () => {
      let rounds = 0;
      while (churning || rounds < 3) {
        const other = `wap_other_${randomUUID().replaceAll("-", "").slice(0, 12)}`;
        await admin(async (c) => {
          await c.query(`create schema ${other}; ${tables.join("").replaceAll("%s", other)}`);
          await c.query(`drop schema ${other} cascade`);
        });
        rounds++;
      }
      return rounds;
    };
    const churns = [churner(), churner(), churner()];
    try {
      for (let i = 0; i < 12; i++) {
        const storage = await createPostgresStorage({ connectionString: await freshSchema() });
        await storage.close();
      }
    } finally {
      churning = false;
    }
    for (const rounds of await Promise.all(churns)) expect(rounds).toBeGreaterThanOrEqual(3);
  }, 120_000);

  it("declares multiInstance; concurrent starts on a new schema migrate it exactly once", async () => {
    const fresh = await freshSchema();
    const storages = await Promise.all(
      Array.from({ length: 5 }, () => createPostgresStorage({ connectionString: fresh })),
    );
    try {
      expect(storages.every((s) => s.capabilities.multiInstance)).toBe(true);
      const schema = new URL(fresh).searchParams.get("application_name");
      const rows = await admin((c) => c.query(`select name from ${schema}.wap_schema_migration`));
      const names = rows.rows.map((r: { name: string }) => r.name).sort();
      expect(names).toEqual(Object.keys(createMigrations("postgres")).sort());
    } finally {
      await Promise.all(storages.map((s) => s.close()));
    }
  });

  it("refuses a schema newer than the code with a clear error", async () => {
    const fresh = await freshSchema();
    await (await createPostgresStorage({ connectionString: fresh })).close();
    const schema = new URL(fresh).searchParams.get("application_name");
    await admin((c) =>
      c.query(`insert into ${schema}.wap_schema_migration values ('002_from_the_future', '2999-01-01')`),
    );
    const error = await createPostgresStorage({ connectionString: fresh }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SchemaVersionError);
    expect((error as Error).message).toMatch(/newer than this version.*002_from_the_future/);
  });

  it("011_account_security names accounts whose usernames differ only in case", async () => {
    const fresh = await freshSchema();
    await (await createPostgresStorage({ connectionString: fresh })).close();
    const schema = new URL(fresh).searchParams.get("application_name");
    const [a, b] = [randomUUID(), randomUUID()];
    // A database from before the rule: without what 011 and later migrations add, nor their
    // records (Kysely applies only a history without gaps).
    await admin(async (c) => {
      await c.query(`alter table ${schema}.targets drop column reported_endpoints`);
      await c.query(
        `drop table ${schema}.webhook_deliveries, ${schema}.webhook_secrets, ${schema}.webhook_endpoints`,
      );
      await c.query(`drop table ${schema}.ssh_sessions`);
      await c.query(`alter table ${schema}.daemons drop column require_recording`);
      await c.query(`drop table ${schema}.access_requests`);
      await c.query(
        `alter table ${schema}.principal_subjects drop column grant_kind, drop column valid_until, drop column approval_policy, drop column limits`,
      );
      await c.query(
        `alter table ${schema}.issued_certificates drop column limits, drop column single_use, drop column step_up_id`,
      );
      await c.query(`drop table ${schema}.ssh_step_up_certificates, ${schema}.ssh_step_ups`);
      await c.query(`drop index ${schema}.users_username_lower_key`);
      await c.query(`drop index ${schema}.cli_logins_address_idx`);
      await c.query(`drop index ${schema}.daemon_sessions_workspace_state_idx`);
      await c.query(
        `alter table ${schema}.cli_logins drop column user_code_hash, drop column code_failures, drop column denied_at, drop column client_os, drop column client_version`,
      );
      await c.query(
        `drop table ${schema}.audit_chain_heads, ${schema}.audit_checkpoints, ${schema}.audit_signing_keys; drop function ${schema}.wap_chain_hash; drop index ${schema}.audit_events_chain_key`,
      );
      await c.query(
        `alter table ${schema}.audit_events drop column chain_position, drop column previous_hash, drop column hash`,
      );
      await c.query(`delete from ${schema}.wap_schema_migration where name >= '011_account_security'`);
      const insert = `insert into ${schema}.users (id, name, username, email, email_verified, picture, password_hash, enable_email_recovery, created_at, updated_at) values ($1, 'n', $2, $3, 0, '', null, 0, 0, 0)`;
      await c.query(insert, [a, "Ada", `${a}@example.com`]);
      await c.query(insert, [b, "ADA", `${b}@example.com`]);
    });
    const error = await createPostgresStorage({ connectionString: fresh }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UsernameCaseClashError);
    expect((error as UsernameCaseClashError).clashes.map((c) => c.id).sort()).toEqual([a, b].sort());
    expect((error as Error).message).toMatch(/unique whatever their case.*UPDATE users/);
    await admin((c) => c.query(`update ${schema}.users set username = 'ada-two' where id = $1`, [b]));
    const storage = await createPostgresStorage({ connectionString: fresh });
    try {
      expect((await storage.users.findByUsername("ada"))?.id).toBe(a);
    } finally {
      await storage.close();
    }
  });

  it("an unreachable server is StorageUnavailableError", async () => {
    const port = await freePort();
    const error = await createPostgresStorage({
      connectionString: `postgres://postgres@127.0.0.1:${port}/none`,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StorageUnavailableError);
  });

  it("a connection killed inside a transaction is StorageUnavailableError", async () => {
    const storage = await createPostgresStorage({ connectionString: url });
    const appName = new URL(url).searchParams.get("application_name");
    try {
      const error = await storage
        .transaction(async (tx) => {
          await tx.users.findById(randomUUID());
          await admin((c) =>
            c.query("select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1", [
              appName,
            ]),
          );
          await tx.users.findById(randomUUID());
        })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StorageUnavailableError);
      // The pool replaces the dead connection.
      await expect(storage.ping()).resolves.toBeUndefined();
    } finally {
      await storage.close();
    }
  });

  it("with strictTransactions off, a call on the storage itself inside a transaction joins it", async () => {
    const storage = await createPostgresStorage({ connectionString: url, strictTransactions: false });
    try {
      const id = randomUUID();
      const user = {
        id,
        name: "Grace Hopper",
        username: `grace-${id}`,
        email: `grace-${id}@example.com`,
        emailVerified: true,
        picture: "",
        passwordHash: null,
        enableEmailRecovery: false,
        createdAt: new Date(0),
        updatedAt: new Date(0),
      };
      await expect(
        storage.transaction(async (tx) => {
          await tx.users.insert(user);
          // It sees the transaction's uncommitted write, and goes with its rollback.
          expect(await storage.users.findById(id)).toEqual(user);
          throw new Error("abandon");
        }),
      ).rejects.toThrow("abandon");
      expect(await storage.users.findById(id)).toBeNull();
    } finally {
      await storage.close();
    }
  });

  it("leaves a lent pool open on close", async () => {
    const pool = new pg.Pool({ connectionString: url });
    const storage = await createPostgresStorage({ pool });
    await storage.close();
    expect((await pool.query("select 1 as one")).rows).toEqual([{ one: 1 }]);
    await pool.end();
  });
});
