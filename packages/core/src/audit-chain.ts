/**
 * @wap/core/audit-chain: reading and verifying an audit chain export offline, kept for code that
 * imported it from the core. It lives in @wap/audit-chain, which is what verifiers should depend on.
 *
 * @module
 */
export type {
  ChainFile,
  ChainFileCheckpoint,
  ChainFileEntry,
  ChainVerdict,
  RecordingMatch,
} from "@wap/audit-chain";
export {
  ChainFileError,
  chainFileCheckpointMessage,
  findRecording,
  rawAuditPublicKey,
  readChainFile,
  verifyChainFile,
  writeChainFile,
} from "@wap/audit-chain";
