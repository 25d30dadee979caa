/**
 * Reasons of sessions on daemons, their streams, the terminal endpoint and recordings.
 *
 * @module
 */
import type { ReasonTable } from "./reason-table.js";

export const sessionReasons = {
  SESSION_NOT_FOUND: {
    code: "not_found",
    description: "The session does not exist (or, for a daemon, is not pending for it); check the id.",
  },
  SESSION_MISMATCH: {
    code: "permission_denied",
    description:
      "A daemon's ready message does not match the session that was pushed to it; the daemon should drop the session.",
  },
  NO_LOGIN_GRANT: {
    code: "permission_denied",
    description:
      "The caller holds no grant to log in as this username on the daemon (or lost it); ask for a grant.",
  },
  SSH_CERTIFICATE_UNKNOWN: {
    code: "permission_denied",
    description:
      "An SSH login's certificate is not one the platform issued for the authority the daemon's target trusts; the login must end.",
  },
  SSH_COMMAND_NOT_ALLOWED: {
    code: "permission_denied",
    description:
      "An SSH login asks for a shell or a command its certificate's command list (the grant's) does not hold; the login is refused and the refusal audited (`certificate.use_refused`).",
  },
  SSH_CERTIFICATE_REVOKED: {
    code: "permission_denied",
    description: "An SSH login's certificate was revoked or has expired; the login must end.",
  },
  SESSION_READY_TIMEOUT: {
    code: "deadline_exceeded",
    description: "A daemon opened a session stream and sent no ready message in time; send ready first.",
  },
  SESSION_READY_MISSING: {
    code: "invalid_argument",
    description:
      "A session stream did not start with a ready message; send ready{sessionId, username, userId} first.",
  },
  SESSION_DEADLINE: {
    code: "deadline_exceeded",
    description: "The session stream's deadline (Connect-Timeout-Ms) passed; open a new stream.",
  },
  TERMINAL_SUBPROTOCOL_REQUIRED: {
    code: "invalid_argument",
    description: "The terminal WebSocket handshake did not offer the terminal subprotocol; offer it.",
  },
  CREDENTIALS_REQUIRED: {
    code: "unauthenticated",
    description:
      "Attaching to a terminal needs the session cookie or a bearer token in the subprotocol; send one.",
  },
  INVALID_PATH: {
    code: "invalid_argument",
    description: "The terminal path's workspace and session ids are not UUIDs; fix the path.",
  },
  RELAY_TOKEN_INVALID: {
    code: "unauthenticated",
    description:
      "The relay endpoint is for the server's own instances and the relay token did not check out.",
  },
  SESSION_NOT_RELAYED_HERE: {
    code: "not_found",
    description:
      "Another server instance asked this one to relay a session it does not hold; the instance should look the session up again.",
  },
  RECORDING_NOT_EXPECTED: {
    code: "failed_precondition",
    description:
      "An agent sent recording data for an SSH login its daemon did not record when it began; send none.",
  },
  SESSION_NOT_RECORDED: {
    code: "failed_precondition",
    description:
      "A watch was asked of an SSH login its daemon does not record, and only recorded logins can be watched; turn on the daemon's recordSessions for later logins.",
  },
  RECORDING_OFFSET: {
    code: "failed_precondition",
    description:
      "An agent appended to an SSH login's recording past what is stored; resume from the size the message gives.",
  },
  RECORDING_NOT_FOUND: {
    code: "not_found",
    description: "The recording does not exist in this workspace; check its id.",
  },
} as const satisfies ReasonTable;
