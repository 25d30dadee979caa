/**
 * Sign-in throttling against password and code guessing, per account and per client address.
 * The counters live in storage, so every server instance enforces the same limit.
 *
 * After `free` failures, each further attempt must wait 1 s, 2 s, 4 s, ... (at most
 * `maxBackoff`) after the last failure; failures older than `maxBackoff` are forgotten. A
 * throttled attempt is refused before the secret is checked, so the answer never depends on it.
 *
 * The account counter is taken *before* the secret is checked (a success clears it), so a burst
 * of concurrent guesses cannot all slip through between a check and its count. The address
 * counter counts failures only: sign-ins behind one NAT must not add up.
 *
 * @module
 */
import { ResourceExhaustedError } from "../errors.js";
import type { Services } from "../operations/services.js";
import type { LoginThrottleRecord } from "../storage/login-throttles.js";
import { accountConfig } from "./account-config.js";

/** What one sign-in attempt is counted against. */
export interface ThrottleSubject {
  /** Lower-cased email (whether or not the account exists: the answer must not tell). */
  readonly account: string;
  /** The client address; empty when unknown (embedded calls). */
  readonly ipAddress: string;
}

interface Policy {
  readonly free: number;
  readonly maxBackoffMs: number;
}

/** Milliseconds an attempt must wait after the last of `failures` failures. */
export function backoffMs(failures: number, policy: Policy): number {
  if (failures < policy.free) return 0;
  return Math.min(policy.maxBackoffMs, 1000 * 2 ** Math.min(failures - policy.free, 30));
}

function waitMs(state: Pick<LoginThrottleRecord, "failures">, last: Date | null, now: Date, policy: Policy) {
  if (last === null) return 0;
  return Math.max(0, last.getTime() + backoffMs(state.failures, policy) - now.getTime());
}

function throttled(ms: number): ResourceExhaustedError {
  const seconds = Math.max(1, Math.ceil(ms / 1000));
  return new ResourceExhaustedError(`too many sign-in attempts; try again in ${seconds} s`, {
    reason: "LOGIN_THROTTLED",
    headers: { "Retry-After": String(seconds) },
  });
}

function policies(services: Services) {
  const config = accountConfig(services);
  const maxBackoffMs = config.loginMaxBackoffSeconds * 1000;
  return {
    account: { free: config.loginFreeFailuresPerAccount, maxBackoffMs },
    ip: { free: config.loginFreeFailuresPerIp, maxBackoffMs },
  };
}

const accountKey = (subject: ThrottleSubject) => `account:${subject.account.toLowerCase()}`;
const ipKey = (subject: ThrottleSubject) => `ip:${subject.ipAddress}`;

/**
 * Admits one attempt or throws `resource_exhausted` with a `Retry-After` hint. Counts the attempt
 * against the account; call {@link attemptFailed} or {@link attemptSucceeded} once it is decided.
 */
export async function admitAttempt(services: Services, subject: ThrottleSubject, now: Date): Promise<void> {
  const policy = policies(services);
  const forgetBefore = new Date(now.getTime() - policy.account.maxBackoffMs);
  const live = (record: LoginThrottleRecord | null) =>
    record !== null && record.lastFailureAt >= forgetBefore ? record : null;
  if (subject.ipAddress !== "") {
    const ip = live(await services.storage.loginThrottles.find(ipKey(subject)));
    const wait = ip ? waitMs(ip, ip.lastFailureAt, now, policy.ip) : 0;
    if (wait > 0) throw throttled(wait);
  }
  const account = live(await services.storage.loginThrottles.find(accountKey(subject)));
  const wait = account ? waitMs(account, account.lastFailureAt, now, policy.account) : 0;
  if (wait > 0) throw throttled(wait);
  // Take the count now. Judged by the state before this attempt (one failure fewer, the previous
  // failure time), a racing attempt that already used the last free slot shows up here.
  const counted = await services.storage.loginThrottles.recordFailure(accountKey(subject), now, forgetBefore);
  const before = { failures: counted.failures - 1 };
  const raced = waitMs(before, counted.previousFailureAt, now, policy.account);
  if (raced > 0) throw throttled(raced);
}

/** The attempt's secret was wrong: count it against the client address too. */
export async function attemptFailed(services: Services, subject: ThrottleSubject, now: Date): Promise<void> {
  if (subject.ipAddress === "") return;
  const policy = policies(services);
  await services.storage.loginThrottles.recordFailure(
    ipKey(subject),
    now,
    new Date(now.getTime() - policy.ip.maxBackoffMs),
  );
}

/** The attempt succeeded: the account starts afresh. */
export async function attemptSucceeded(services: Services, subject: ThrottleSubject): Promise<void> {
  await services.storage.loginThrottles.clear(accountKey(subject));
}
