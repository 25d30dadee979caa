/**
 * Every RPC the platform serves, listed once: the unary operations, the server streams and the
 * daemons' bidirectional streams. The platform builds its lookup tables from these lists and the
 * server learns every procedure from the platform; docs/permissions.md and docs/validation.md
 * are written from them.
 *
 * @module
 */
import { accessRequestOperations } from "../access-requests/operations.js";
import { auditOperations } from "../audit/operations.js";
import { authOperations } from "../auth/operations.js";
import { recoveryOperations } from "../auth/recovery.js";
import { billingOperations } from "../billing/operations.js";
import { certificateOperations } from "../certificates/operations.js";
import { backupCodeOperations } from "../credentials/backup-codes.js";
import { passkeyOperations } from "../credentials/passkeys.js";
import { passwordOperations } from "../credentials/password-operations.js";
import { daemonControlStream, daemonSessionStream } from "../daemon-streams/streams.js";
import { withDaemonNotifications } from "../daemons/change-notifications.js";
import { enrollmentOperations } from "../daemons/enrollment.js";
import { daemonOperations } from "../daemons/operations.js";
import { syncDaemon } from "../daemons/sync.js";
import { getCliLogin, streamCliLogin, verifyCliLogin } from "../devices/cli-login.js";
import { deviceOperations } from "../devices/operations.js";
import { domainOperations } from "../domains/operations.js";
import type { AnyBidiStreamingOperation, AnyStreamingOperation } from "../events/streaming-operation.js";
import { subscribeWorkspaceEvents } from "../events/subscribe-workspace-events.js";
import { invitationOperations } from "../invitations/operations.js";
import { licenseOperations } from "../license/operations.js";
import { memberOperations } from "../members/operations.js";
import type { AnyOperation } from "../operations/operation.js";
import { principalOperations } from "../principals/operations.js";
import { recordingOperations, recordingStreamingOperations } from "../recordings/operations.js";
import { appendSshRecording } from "../recordings/ssh-recording.js";
import { serviceAccountOperations } from "../service-accounts/operations.js";
import { sessionOperations } from "../sessions/operations.js";
import { sshSessionOperations } from "../sessions/ssh-sessions.js";
import { ssoOperations } from "../sso/operations.js";
import { stepUpOperations } from "../step-ups/ceremony.js";
import { targetOperations } from "../targets/operations.js";
import { teamOperations } from "../teams/operations.js";
import { userOperations } from "../users/operations.js";
import { utilOperations } from "../util/operations.js";
import { webhookOperations } from "../webhooks/operations.js";
import { workspaceOperations } from "../workspaces/operations.js";
import { updateWorkspaceSettings } from "../workspaces/settings.js";

// Wrapped so that changes to grants and authorities reach the daemons that enforce them.
export const allOperations: readonly AnyOperation[] = withDaemonNotifications([
  ...authOperations,
  // The account beyond sign-up and sign-in: recovery, credentials, devices, profile.
  ...recoveryOperations,
  ...passwordOperations,
  ...passkeyOperations,
  ...backupCodeOperations,
  verifyCliLogin,
  getCliLogin,
  ...deviceOperations,
  ...userOperations,
  ...workspaceOperations,
  // Who belongs to a workspace and who may reach which target.
  ...memberOperations,
  updateWorkspaceSettings,
  ...domainOperations,
  ...invitationOperations,
  ...teamOperations,
  ...targetOperations,
  ...principalOperations,
  ...certificateOperations,
  ...stepUpOperations,
  ...serviceAccountOperations,
  ...daemonOperations,
  // The daemon protocol: enrolment, sync, terminal sessions and SSH logins.
  ...enrollmentOperations,
  syncDaemon,
  ...sessionOperations,
  ...sshSessionOperations,
  appendSshRecording,
  ...utilOperations,
  ...ssoOperations,
  ...billingOperations,
  ...licenseOperations,
  ...auditOperations,
  ...recordingOperations,
  ...accessRequestOperations,
  ...webhookOperations,
]);

/** The server streams, run by `platform.stream`. */
export const streamingOperations: readonly AnyStreamingOperation[] = [
  subscribeWorkspaceEvents,
  ...recordingStreamingOperations,
  streamCliLogin,
];

/** The daemons' bidirectional streams, run by `platform.bidiStream`. */
export const bidiStreamingOperations: readonly AnyBidiStreamingOperation[] = [
  daemonControlStream,
  daemonSessionStream,
];

/** The procedure paths callers may use without a credential (sign-up, sign-in, public lookups). */
export function publicProcedures(): ReadonlySet<string> {
  const paths = new Set<string>();
  for (const operation of allOperations) {
    if (operation.access.kind === "public")
      paths.add(`/${operation.method.parent.typeName}/${operation.method.name}`);
  }
  return paths;
}
