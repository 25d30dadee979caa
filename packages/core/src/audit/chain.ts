/**
 * The hash chain of a workspace's audit log, defined in @wap/audit-chain so that an auditor's
 * tools (`wap audit verify`) check it with the very code the server writes it with.
 *
 * @module
 */
export type { ChainBreak, ChainLink } from "@wap/audit-chain";
export { auditEntryContent, chainedFields, chainHash, findChainBreak, genesisHash } from "@wap/audit-chain";
