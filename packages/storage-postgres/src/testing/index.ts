/**
 * Test helpers for code that runs against PostgreSQL (`@wap/storage-postgres/testing`).
 *
 * @module
 */

export type { TestPostgres } from "./test-postgres.js";
export { freePort, startTestPostgres } from "./test-postgres.js";
