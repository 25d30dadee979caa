/**
 * PostgreSQL storage for the Workspace Access Platform: the scale-out backend.
 *
 * For applications: `createPostgresStorage` and its options, `createPostgresPool` (one pool
 * shared by the storage and whatever else keeps state in the database, such as a rate-limit
 * store), `createPostgresEventBus` (LISTEN/NOTIFY across instances), and `SchemaVersionError`
 * (the database was migrated by a newer release). For adapter authors: `postgresTraits`, the
 * dialect of the shared query layer.
 *
 * @module
 */

export { SchemaVersionError } from "@wap/storage-sql";
export { postgresTraits } from "./dialect.js";
export type { PostgresEventBusOptions } from "./event-bus.js";
export { createPostgresEventBus, eventChannelOf } from "./event-bus.js";
export type { PostgresConnectionPool, PostgresPoolOptions } from "./pool.js";
export { createPostgresPool } from "./pool.js";
export type { PgPoolLike, PostgresStorageOptions } from "./postgres-storage.js";
export { createPostgresStorage } from "./postgres-storage.js";
