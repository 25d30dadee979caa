/**
 * A PostgreSQL schema of its own for each benchmark server: every run starts from an empty
 * database with a master key of its own, whatever earlier runs left in BENCH_DATABASE_URL.
 *
 * @module
 */
import { startTestPostgres } from "@wap/storage-postgres/testing";

/** A fresh schema in the database `databaseUrl` names; `drop` removes it and what it holds. */
export async function freshBenchSchema(databaseUrl: string): Promise<{ url: string; drop(): Promise<void> }> {
  // The testing kit reads the server to use from this variable.
  const saved = process.env.WAP_TEST_DATABASE_URL;
  process.env.WAP_TEST_DATABASE_URL = databaseUrl;
  try {
    const postgres = await startTestPostgres();
    return { url: await postgres.freshSchema(), drop: () => postgres.stop() };
  } finally {
    if (saved === undefined) delete process.env.WAP_TEST_DATABASE_URL;
    else process.env.WAP_TEST_DATABASE_URL = saved;
  }
}
