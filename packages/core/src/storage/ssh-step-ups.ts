/**
 * SSH step-ups (`ssh_step_ups`, `ssh_step_up_certificates`): a passkey ceremony of one user that
 * lets them sign one single-use certificate for each login it lists.
 *
 * @module
 */

/** A login a step-up covers. */
export interface StepUpTarget {
  readonly targetId: string;
  readonly login: string;
}

export interface SshStepUpRecord {
  readonly id: string;
  readonly workspaceId: string;
  /** The user who began it: the only one who may complete it and sign under it. */
  readonly userId: string;
  readonly targets: readonly StepUpTarget[];
  /**
   * The WebAuthn challenge, base64url, sent to the owner's ceremony page in the request options. A
   * nonce, not a credential: an assertion also needs the user's authenticator, and the step-up
   * accepts one assertion only.
   */
  readonly challenge: string;
  readonly createdAt: Date;
  /** Pending: until when the passkey may be given. Completed: until when certificates may be signed. */
  readonly expiresAt: Date;
  readonly completedAt: Date | null;
  /** The passkey that completed it. */
  readonly passkeyId: string | null;
}

/** A step-up with the logins a certificate has been signed for under it. */
export interface SshStepUpWithUses extends SshStepUpRecord {
  readonly signed: readonly StepUpTarget[];
}

export interface SshStepUpRepository {
  insert(record: SshStepUpRecord): Promise<void>;
  /** The step-up of that workspace, or null (another workspace's is null too). */
  findById(workspaceId: string, id: string): Promise<SshStepUpWithUses | null>;
  /**
   * Marks the pending step-up completed at `at` (if it has not expired by then), with the passkey
   * and the end of its signing window. True for exactly one caller.
   */
  complete(workspaceId: string, id: string, passkeyId: string, at: Date, expiresAt: Date): Promise<boolean>;
  /**
   * Records that the certificate `certificateId` is signed for `target` under the step-up. True the
   * first time, false to every later (or concurrent) claim of the same login.
   */
  claimTarget(workspaceId: string, id: string, target: StepUpTarget, certificateId: string): Promise<boolean>;
  /** Deletes step-ups that expired before `before` (with their claims). */
  deleteExpired(before: Date): Promise<void>;
}
