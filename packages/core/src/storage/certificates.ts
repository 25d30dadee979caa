/**
 * The issuance ledger: every certificate the platform signed (`issued_certificates`).
 *
 * @module
 */
import type { Page, PageRequest } from "./common.js";

export type IssuedCertificateKind = "ssh_user" | "ssh_host" | "x509";

export type RevocationReasonName =
  | "unspecified"
  | "key_compromise"
  | "affiliation_changed"
  | "superseded"
  | "cessation_of_operation"
  | "privilege_withdrawn";

/** One entry of the issuance ledger: a certificate the platform signed. Only revocation changes it. */
/** The limits an SSH user certificate carries (principals/grant-limits.ts). */
export interface CertificateLimits {
  /** source-address, as written; empty: anywhere. */
  readonly sourceAddresses: readonly string[];
  readonly permitPortForwarding: boolean;
  readonly permitAgentForwarding: boolean;
  readonly permitX11Forwarding: boolean;
  readonly permitPty: boolean;
  readonly verifyRequired: boolean;
  readonly skKeysOnly: boolean;
  /** The command allowlist; empty: any. */
  readonly commands: readonly string[];
  /** Signed under a grant that requires a passkey step-up for each connection. */
  readonly requireStepUp?: boolean;
}

export interface IssuedCertificateRecord {
  readonly id: string;
  readonly workspaceId: string;
  readonly caId: string;
  /** The authority's `keyVersion` that signed it. */
  readonly caKeyVersion: number;
  readonly kind: IssuedCertificateKind;
  /**
   * Unique per authority. SSH: the uint64 serial in decimal, as `ssh-keygen -L` prints it.
   * X.509: lower-case hex of the serial's minimal bytes.
   */
  readonly serial: string;
  /** `SHA256:<base64>` of the subject's public key (SSH blob, or X.509 SubjectPublicKeyInfo). */
  readonly keyFingerprint: string;
  /** SSH principals; for X.509 the subject CN then the SANs as `DNS:`, `IP:`, `email:`, `URI:`. */
  readonly principals: readonly string[];
  readonly validAfter: Date;
  readonly validBefore: Date;
  /** `user`, `service_account` or `daemon`, and its id. */
  readonly requesterType: string;
  readonly requesterId: string;
  readonly targetId: string | null;
  /** The SSH key id, or the X.509 subject; identifies the request in sshd and TLS logs. */
  readonly keyId: string;
  readonly createdAt: Date;
  /**
   * SSH user certificates signed under a grant with limits: what the certificate allows, with the
   * source addresses as written into it. Absent otherwise.
   */
  readonly limits?: CertificateLimits | null;
  /** Set (true) on SSH user certificates valid once, on `targetId` only. */
  readonly singleUse?: boolean;
  /** The step-up it was signed under (SSH user certificates of a grant requiring one). */
  readonly stepUpId?: string | null;
  /** Set once, when the certificate is revoked; revocation is final. */
  readonly revokedAt?: Date | null;
  readonly revocationReason?: RevocationReasonName | null;
  /** `<actor type>:<actor id>` of who revoked it (`system:<action>` for revocations by a change of access). */
  readonly revokedBy?: string | null;
}

export interface IssuedCertificateFilter extends PageRequest {
  readonly caId?: string;
  readonly kind?: IssuedCertificateKind;
  readonly requesterId?: string;
  readonly targetId?: string;
  /** Certificates valid at some instant of [validFrom, validUntil). */
  readonly validFrom?: Date;
  readonly validUntil?: Date;
  readonly revoked?: boolean;
}

/** How a revocation is recorded. */
export interface Revocation {
  readonly revokedAt: Date;
  readonly reason: RevocationReasonName;
  readonly revokedBy: string;
}

/** Which unexpired, unrevoked certificates a revocation takes. */
export type RevocationSelector =
  | { readonly by: "serial"; readonly caId: string; readonly serial: string }
  | { readonly by: "key"; readonly keyFingerprint: string; readonly caId?: string }
  | { readonly by: "requester"; readonly requesterId: string };

/**
 * The issuance ledger. Entries are only ever added; they outlive the authority that signed them
 * and go only with their workspace.
 */
export interface IssuedCertificateRepository {
  /**
   * Records an issued certificate. Serial numbers are unique per authority: a second entry with
   * the same `caId` and `serial` throws {@link UniqueViolationError}
   * (`issued_certificates.serial`) and records nothing, even when both race.
   */
  insert(certificate: IssuedCertificateRecord): Promise<void>;
  findBySerial(workspaceId: string, caId: string, serial: string): Promise<IssuedCertificateRecord | null>;
  findById(workspaceId: string, id: string): Promise<IssuedCertificateRecord | null>;
  /**
   * Newest first. The ledger is not counted: `total` is the entries up to the end of this page,
   * plus one when more follow (exact on the last page), so a page over a ledger of millions costs
   * what the page costs.
   */
  list(workspaceId: string, filter: IssuedCertificateFilter): Promise<Page<IssuedCertificateRecord>>;
  /**
   * Marks the certificates `selector` names that are unexpired at `revocation.revokedAt` and not
   * revoked yet, and returns them as revoked. Revoking again changes nothing.
   */
  revoke(
    workspaceId: string,
    selector: RevocationSelector,
    revocation: Revocation,
  ): Promise<IssuedCertificateRecord[]>;
  /**
   * Revokes every unexpired, unrevoked certificate `requesterId` asked for, in every workspace
   * (the account is being deleted). Returns them as revoked.
   */
  revokeAllOfRequester(requesterId: string, revocation: Revocation): Promise<IssuedCertificateRecord[]>;
  /** The revoked certificates of an authority still unexpired at `now`, in no particular order. */
  listRevoked(workspaceId: string, caId: string, now: Date): Promise<IssuedCertificateRecord[]>;
  /**
   * The latest `validBefore` among the certificates one key version of an authority signed, or
   * `null` when it signed none: how long that key must stay trusted after a rollover.
   */
  latestExpiry(workspaceId: string, caId: string, caKeyVersion: number): Promise<Date | null>;
}
