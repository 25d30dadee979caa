/**
 * Settings of just-in-time access requests, part of `PlatformConfig`.
 *
 * @module
 */

export interface AccessRequestConfig {
  /** How long a request waits for its approvals before it expires. Default 3600 s (1 hour). */
  readonly accessRequestDecisionSeconds: number;
}

export const defaultAccessRequestConfig: AccessRequestConfig = {
  accessRequestDecisionSeconds: 3600,
};
