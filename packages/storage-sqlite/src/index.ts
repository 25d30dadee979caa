/**
 * Embedded SQLite storage for the Workspace Access Platform (better-sqlite3, WAL).
 *
 * For applications: `createSqliteStorage` and its options, and `SchemaVersionError` (the file was
 * migrated by a newer release). For adapter authors: `sqliteTraits`, the dialect of the shared
 * query layer.
 *
 * @module
 */

export { SchemaVersionError } from "@wap/storage-sql";
export { DatabaseInUseError, lockDatabase } from "./database-files.js";
export { sqliteTraits } from "./dialect.js";
export type { SqliteDatabaseLike, SqliteStorageOptions } from "./sqlite-storage.js";
export { createSqliteStorage } from "./sqlite-storage.js";
