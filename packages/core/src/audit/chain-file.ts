/**
 * The chain export file, defined in @wap/audit-chain (the server writes it, `wap audit verify`
 * reads it).
 *
 * @module
 */
export type { ChainFileCheckpoint, ChainFileEntry } from "@wap/audit-chain";
export { chainFileWriter } from "@wap/audit-chain";
