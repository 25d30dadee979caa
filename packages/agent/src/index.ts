/**
 * @wap/agent: the host agent as a library, what the `wap-agent` command runs.
 *
 * @module
 */
export type { Agent, AgentEvents, AgentOptions } from "./agent.js";
export { defaultHostKeyFile, startAgent } from "./agent.js";
export type { BackoffOptions } from "./backoff.js";
export { Backoff, defaultBackoff } from "./backoff.js";
export type { Allowlist, CommandDecision } from "./command-allowlist.js";
export { allowlistOf, certificateOfUserAuth, decideCommand } from "./command-allowlist.js";
export type { EnrollOptions, EnrollResult } from "./enroll.js";
export { enroll } from "./enroll.js";
export { exitCodes, NotEnrolledError, UnreadableFileError } from "./errors.js";
export type { LogEntry, Logger } from "./log.js";
export { jsonLineLogger, silentLogger } from "./log.js";
export type { PrincipalsMap } from "./sshd-files.js";
export { defaultSshdDir, SshdFiles } from "./sshd-files.js";
export type { Enrolment } from "./state.js";
export { AgentState, defaultStateDir } from "./state.js";
export { agentVersion } from "./version.js";
