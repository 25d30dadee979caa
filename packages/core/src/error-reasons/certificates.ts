/**
 * Reasons of certificate authorities, certificate issuance and revocation.
 *
 * @module
 */
import type { ReasonTable } from "./reason-table.js";

export const certificateReasons = {
  CERTIFICATE_AUTHORITY_NOT_FOUND: {
    code: "not_found",
    description: "The certificate authority does not exist in this workspace; check its id.",
  },
  CA_NOT_FOUND: {
    code: "not_found",
    description:
      "No certificate authority of this workspace has the id (or, for EnrollDaemon, the name) sent as `caId`; check it.",
  },
  CA_NOT_SSH: {
    code: "failed_precondition",
    description:
      "The authority named by `caId` is an X.509 authority where an SSH one is needed; name an SSH authority.",
  },
  NO_DEFAULT_SSH_CA: {
    code: "failed_precondition",
    description:
      "No `caId` was sent and the workspace has no default SSH authority: create one (the first of each kind becomes the default), make one the default, or send `caId`.",
  },
  CERTIFICATE_AUTHORITY_NAME_TAKEN: {
    code: "already_exists",
    description: "Another certificate authority of the workspace has this name; pick another.",
  },
  CERTIFICATE_AUTHORITY_IN_USE: {
    code: "failed_precondition",
    description: "Targets still trust the authority; give them another authority before deleting it.",
  },
  CERTIFICATE_AUTHORITY_INACTIVE: {
    code: "failed_precondition",
    description: "The authority is not active and signs nothing; use an active authority.",
  },
  CERTIFICATE_AUTHORITY_EXPIRED: {
    code: "failed_precondition",
    description: "The authority's own certificate has expired; roll it over to a new key, then sign.",
  },
  NO_DEFAULT_CERTIFICATE_AUTHORITY: {
    code: "failed_precondition",
    description:
      "No authority was named and the workspace has no default one of the kind needed: create one (the first of each kind becomes the default), make one the default, or name one.",
  },
  WRONG_AUTHORITY_TYPE: {
    code: "failed_precondition",
    description:
      "The authority is of the other kind (SSH or X.509) than the call needs; name one of the right kind.",
  },
  NOT_THE_TARGET_AUTHORITY: {
    code: "failed_precondition",
    description: "The target trusts another authority than the one named; sign with the target's authority.",
  },
  LIMITS_EXCEED_GRANT: {
    code: "invalid_argument",
    description:
      "The request asks for more than the caller's grant of the login allows (a forwarding, the PTY, an address, a command, or without a requirement of the grant); ask for less.",
  },
  STEP_UP_NOT_FOR_SERVICE_ACCOUNTS: {
    code: "invalid_argument",
    description:
      "A grant to a service account asks for `limits.requireStepUp`: a step-up is a passkey a person gives, so grant the login without it, or to a user or team.",
  },
  STEP_UP_REQUIRED: {
    code: "failed_precondition",
    description:
      "The caller's grant of the login requires a passkey step-up for each connection and the request names none: begin one (BeginSSHStepUp, or `wap ssh`), give the passkey on its page, then sign with `stepUpId`.",
  },
  STEP_UP_NOT_REQUIRED: {
    code: "failed_precondition",
    description:
      "A step-up was asked for (or named) for a login whose grant to the caller does not require one; sign its certificate without a step-up.",
  },
  STEP_UP_NOT_FOUND: {
    code: "not_found",
    description:
      "No step-up of the caller in this workspace has this id (another user's step-up is not found either); begin a new one.",
  },
  STEP_UP_NO_PASSKEY: {
    code: "failed_precondition",
    description: "A step-up needs a passkey and the caller has none; add one on the account page first.",
  },
  STEP_UP_PENDING: {
    code: "failed_precondition",
    description:
      "The step-up has not been completed with a passkey yet; give the passkey on its ceremony page, then ask again.",
  },
  STEP_UP_EXPIRED: {
    code: "failed_precondition",
    description:
      "The step-up expired (its passkey was not given in time, or its certificates were not asked for in time); begin a new one.",
  },
  STEP_UP_COMPLETED: {
    code: "failed_precondition",
    description:
      "The step-up was already completed: its challenge is spent. Begin a new one for another run.",
  },
  STEP_UP_NOT_COVERED: {
    code: "failed_precondition",
    description:
      "The step-up does not list this target and login, or a certificate for them was already signed under it (one each); begin a new step-up.",
  },
  INVALID_STEP_UP_ASSERTION: {
    code: "permission_denied",
    description:
      "The passkey assertion does not answer the step-up's challenge with a verified passkey of the user who began it; the refusal is audited. Try again with your own passkey.",
  },
  SOURCE_ADDRESS_NOT_ALLOWED: {
    code: "permission_denied",
    description:
      "The grant pins certificates to the caller's address, and that address lies outside the blocks the grant allows; connect from an allowed network.",
  },
  NO_GRANT_OF_LOGIN: {
    code: "permission_denied",
    description: "The caller holds no grant of this login on the target now; ask for access first.",
  },
  SK_KEY_REQUIRED: {
    code: "invalid_argument",
    description: "The grant signs only sk- (FIDO hardware) keys; send such a key.",
  },
  KEY_TYPE_NOT_ALLOWED: {
    code: "invalid_argument",
    description: "The key type is not allowed by the workspace's issuance policy; use an allowed key type.",
  },
  INVALID_PUBLIC_KEY: {
    code: "invalid_argument",
    description:
      "`publicKey` is not a usable SSH public key (see the violation); send one line of an OpenSSH public key.",
  },
  INVALID_CSR: {
    code: "invalid_argument",
    description:
      "`csr` is not a usable PKCS#10 request (see the violation); send a PEM CSR with a valid self-signature.",
  },
  NAME_NOT_ALLOWED: {
    code: "permission_denied",
    description:
      "The certificate would name a host or identity the caller may not certify; ask for names the policy allows.",
  },
  DAEMON_USER_CERTIFICATE: {
    code: "permission_denied",
    description: "A daemon asked for a user certificate; daemons may ask only for host certificates.",
  },
  DAEMON_X509_CERTIFICATE: {
    code: "permission_denied",
    description: "A daemon asked for an X.509 certificate; daemons may not.",
  },
  NOT_THE_DAEMON_TARGET: {
    code: "permission_denied",
    description:
      "A daemon asked for a host certificate of another target than its own; ask for its own target only.",
  },
  CA_KEY_NOT_IN_TOKEN: {
    code: "failed_precondition",
    description:
      "The authority keeps its key in a PKCS#11 token this server cannot reach; configure the token that holds it.",
  },
  PKCS11_TOKEN_NOT_CONFIGURED: {
    code: "failed_precondition",
    description:
      "A PKCS#11 key storage was asked for but the server has no token configured; configure one or use another key storage.",
  },
  ISSUED_CERTIFICATE_NOT_FOUND: {
    code: "not_found",
    description: "No issued certificate has this serial or id in the workspace; check it.",
  },
  CONCURRENT_ROLLOVER: {
    code: "aborted",
    description:
      "Another rollover of the same authority committed first; read the authority again and retry.",
  },
  CONCURRENT_ROTATION: {
    code: "aborted",
    description:
      "Another change of the same authority's keys committed first; read the authority again and retry.",
  },
  ROTATION_IN_PROGRESS: {
    code: "failed_precondition",
    description: "The authority is in a staged rotation; finish or abandon the rotation first.",
  },
  ROTATION_PHASE_NOT_ADJACENT: {
    code: "failed_precondition",
    description: "A staged rotation moves one phase at a time; ask for the phase next to the current one.",
  },
  CRL_NOT_FOUND: {
    code: "not_found",
    description: "No certificate revocation list is published at this path; check the authority's CRL URL.",
  },
  TRUST_NOT_FOUND: {
    code: "not_found",
    description:
      "Nothing is published at this path: no such authority, or a document of the other kind of authority (user_ca_keys and known_hosts are SSH, bundle.pem X.509); check the authority's trust URL.",
  },
} as const satisfies ReasonTable;
