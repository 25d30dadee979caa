/**
 * Nonces of signed requests, remembered to refuse replays (`request_nonces`).
 *
 * @module
 */

export interface RequestNonceRepository {
  /**
   * Records that `signer` used `nonce`, to be remembered until `expiresAt`. Returns `true` the
   * first time, and `false` to every later (or concurrent) claim of the same pair. Forgets nonces
   * that expired before `at` as it goes.
   */
  claim(signer: string, nonce: string, expiresAt: Date, at: Date): Promise<boolean>;
}
