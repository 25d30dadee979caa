/**
 * @wap/core/audit-chain: reading and verifying an audit chain export offline (`wap audit
 * verify`), with nothing but the workspace's public key, without loading the rest of the core.
 *
 * @module
 */
export type {
  ChainFile,
  ChainFileCheckpoint,
  ChainFileEntry,
  ChainVerdict,
  RecordingMatch,
} from "./audit/chain-file.js";
export {
  ChainFileError,
  chainFileCheckpointMessage,
  findRecording,
  readChainFile,
  verifyChainFile,
  writeChainFile,
} from "./audit/chain-file.js";
export { rawAuditPublicKey } from "./audit/checkpoints.js";
