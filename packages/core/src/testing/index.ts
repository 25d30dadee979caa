/**
 * Test helpers: fast-check arbitraries of requests within and just outside every validation
 * bound (for applications that call the platform), and the contract suite every storage adapter
 * runs (for adapter authors). Imports vitest and fast-check: use it from test files only.
 *
 * @module
 */

// --- for applications: property tests against the platform's limits ---
export type { JsonRequest, OutsideRequest } from "./arbitraries.js";
export { outsideValues, requestArbitraries, validValues } from "./arbitraries.js";

// --- for adapter authors ---
export type { StorageContractOptions } from "./storage-contract.js";
export { runStorageContract } from "./storage-contract.js";
