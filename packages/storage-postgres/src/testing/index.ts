/**
 * Test helpers for code that runs against PostgreSQL (`@wap/storage-postgres/testing`).
 *
 * @module
 */
export { freePort, startTestPostgres } from "./test-postgres.js";
export type { TestPostgres } from "./test-postgres.js";
