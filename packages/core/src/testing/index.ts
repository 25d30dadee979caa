/**
 * Test helpers for storage adapter authors: the contract suite every adapter runs.
 * Imports vitest and fast-check: use it from test files only.
 *
 * @module
 */

// --- for adapter authors ---
export type { StorageContractOptions } from "./storage-contract.js";
export { runStorageContract } from "./storage-contract.js";
