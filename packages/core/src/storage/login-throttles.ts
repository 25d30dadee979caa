/**
 * Failed sign-in attempts per key (`login_throttles`).
 *
 * @module
 */

/** Failed sign-in attempts against one key (`account:<email>` or `ip:<address>`). */
export interface LoginThrottleRecord {
  readonly key: string;
  readonly failures: number;
  readonly lastFailureAt: Date;
  /** The failure before the last one; null after the first. */
  readonly previousFailureAt: Date | null;
}

export interface LoginThrottleRepository {
  find(key: string): Promise<LoginThrottleRecord | null>;
  /**
   * Counts one failure against `key` at `at` in one atomic step and returns the new state. When
   * the last failure is older than `forgetBefore`, counting starts again from one. Concurrent
   * calls each see their own count.
   */
  recordFailure(key: string, at: Date, forgetBefore: Date): Promise<LoginThrottleRecord>;
  clear(key: string): Promise<void>;
}
