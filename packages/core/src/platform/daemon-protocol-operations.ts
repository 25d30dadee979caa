/**
 * The operations of the daemon protocol, for the registry: enrolment, sync, terminal sessions and
 * SSH logins.
 *
 * @module
 */

import { enrollmentOperations } from "../daemons/enrollment.js";
import { syncDaemon } from "../daemons/sync.js";
import type { AnyOperation } from "../operations/operation.js";
import { appendSshRecording } from "../recordings/ssh-recording.js";
import { sessionOperations } from "../sessions/operations.js";
import { sshSessionOperations } from "../sessions/ssh-sessions.js";

export const daemonProtocolOperations: readonly AnyOperation[] = [
  ...enrollmentOperations,
  syncDaemon,
  ...sessionOperations,
  ...sshSessionOperations,
  appendSshRecording,
];
