/**
 * @wap/audit-chain: the hash chain of a workspace's audit log, its signed checkpoints and the
 * chain export file, on node:crypto alone. The server writes the chain with it; `wap audit
 * verify` checks an export offline with the same code and the workspace's public key.
 *
 * @module
 */
export type { ChainBreak, ChainLink } from "./chain.js";
export { auditEntryContent, chainedFields, chainHash, findChainBreak, genesisHash } from "./chain.js";
export type {
  ChainFile,
  ChainFileCheckpoint,
  ChainFileEntry,
  ChainFileWriter,
  ChainVerdict,
  RecordingMatch,
} from "./chain-file.js";
export {
  ChainFileError,
  chainFileCheckpointMessage,
  chainFileWriter,
  findRecording,
  readChainFile,
  verifyChainFile,
  writeChainFile,
} from "./chain-file.js";
export {
  auditPublicKeyPem,
  checkpointMessage,
  checkpointVerifies,
  rawAuditPublicKey,
} from "./checkpoint.js";
export type { AuditEntry, Checkpoint } from "./entry.js";
