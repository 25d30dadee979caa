/**
 * Administrative moves on the test PostgreSQL, from outside the server: hold a lock, watch the
 * server's connections (all named by the application_name of its connection string), kill them.
 */
import type { TestPostgres } from "@wap/storage-postgres/testing";

/** The schema (and application_name) of a `freshSchema()` URL. */
export function schemaOf(url: string): string {
  const schema = new URL(url).searchParams.get("application_name");
  if (!schema) throw new Error(`no application_name in ${url}`);
  return schema;
}

/** Kills every connection the server holds (storage, rate limiter, event bus). */
export function killConnections(pg: TestPostgres, schema: string): Promise<number> {
  return pg.admin(async (client) => {
    const { rowCount } = await client.query(
      "select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1 and pid <> pg_backend_pid()",
      [schema],
    );
    return rowCount ?? 0;
  });
}

/** How many connections the server holds, and how many of them wait for a lock. */
export function connectionsOf(pg: TestPostgres, schema: string): Promise<{ open: number; waiting: number }> {
  return pg.admin(async (client) => {
    const { rows } = await client.query(
      `select count(*)::int as open, count(*) filter (where wait_event_type = 'Lock')::int as waiting
         from pg_stat_activity where application_name = $1`,
      [schema],
    );
    return rows[0] as { open: number; waiting: number };
  });
}

/** Waits until one of the server's connections waits for a lock. */
export async function waitForLockWait(pg: TestPostgres, schema: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if ((await connectionsOf(pg, schema)).waiting > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error("the server never waited for the lock");
}

/** An administrative transaction holding an exclusive lock on `table` until released. */
export async function holdTable(pg: TestPostgres, schema: string, table: string) {
  let release = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let locked = () => {};
  const isLocked = new Promise<void>((resolve) => {
    locked = resolve;
  });
  const done = pg.admin(async (client) => {
    await client.query(`set search_path to ${schema}`);
    await client.query("begin");
    await client.query(`lock table ${table} in access exclusive mode`);
    locked();
    await released;
    await client.query("rollback");
  });
  await isLocked;
  return {
    release: async () => {
      release();
      await done;
    },
  };
}
