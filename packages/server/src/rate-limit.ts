/**
 * Rate limiting per principal: `user:<id>`, `sa:<id>`, `daemon:<id>`, or `ip:<address>` for
 * anonymous callers. Fixed windows from rate-limiter-flexible; in process memory for now. The
 * limiter sits behind {@link RateLimiter} so a shared store (Postgres, for several instances) can
 * be plugged in with {@link rateLimiterFrom}.
 *
 * Defaults: 600 requests per 60 s per authenticated principal, 120 per 60 s per anonymous address.
 *
 * @module
 */
import type { Caller } from "@wap/core";
import { type RateLimiterAbstract, RateLimiterMemory, RateLimiterRes } from "rate-limiter-flexible";

/** The outcome of counting one request. */
export interface RateLimitDecision {
  readonly allowed: boolean;
  /** Requests allowed per window. */
  readonly limit: number;
  readonly remaining: number;
  /** When the current window ends (`X-RateLimit-Reset`, in Unix seconds). */
  readonly resetAt: Date;
}

/** Counts requests against a key. */
export interface RateLimiter {
  /** Counts one request for `key`. Rejects only when the store itself fails. */
  consume(key: string): Promise<RateLimitDecision>;
}

/** One limiter for authenticated principals and one for anonymous addresses. */
export interface RateLimiters {
  readonly authenticated: RateLimiter;
  readonly anonymous: RateLimiter;
}

export interface RateLimitSettings {
  /** Requests per window per authenticated principal; 0 disables the limit. Default 600. */
  readonly authenticatedPoints: number;
  /** Requests per window per anonymous client address; 0 disables the limit. Default 120. */
  readonly anonymousPoints: number;
  /** Window length in seconds. Default 60. */
  readonly windowSeconds: number;
}

export const defaultRateLimitSettings: RateLimitSettings = {
  authenticatedPoints: 600,
  anonymousPoints: 120,
  windowSeconds: 60,
};

/** In-memory limiters: right for one process (the embedded SQLite default). */
export function createMemoryRateLimiters(
  settings: RateLimitSettings = defaultRateLimitSettings,
): RateLimiters {
  const build = (points: number, keyPrefix: string) =>
    points > 0
      ? rateLimiterFrom(new RateLimiterMemory({ points, duration: settings.windowSeconds, keyPrefix }))
      : unlimited;
  return {
    authenticated: build(settings.authenticatedPoints, "auth"),
    anonymous: build(settings.anonymousPoints, "anon"),
  };
}

/** Wraps any rate-limiter-flexible limiter (memory, Postgres, ...). */
export function rateLimiterFrom(limiter: RateLimiterAbstract): RateLimiter {
  return {
    async consume(key) {
      const decide = (res: RateLimiterRes, allowed: boolean): RateLimitDecision => ({
        allowed,
        limit: limiter.points,
        remaining: Math.max(0, res.remainingPoints),
        resetAt: new Date(Date.now() + Math.max(0, res.msBeforeNext)),
      });
      try {
        return decide(await limiter.consume(key), true);
      } catch (rejection) {
        // The library rejects with a RateLimiterRes when the limit is hit, with an Error when the store fails.
        if (rejection instanceof RateLimiterRes) return decide(rejection, false);
        throw rejection;
      }
    },
  };
}

/** A limiter that never says no (a limit of 0 in the configuration). */
export const unlimited: RateLimiter = {
  consume: async () => ({ allowed: true, limit: 0, remaining: 0, resetAt: new Date(0) }),
};

/** The key a caller is counted under. */
export function rateLimitKey(caller: Caller, ipAddress: string): string {
  switch (caller.kind) {
    case "user":
      return `user:${caller.userId}`;
    case "service_account":
      return `sa:${caller.serviceAccountId}`;
    case "daemon":
      return `daemon:${caller.daemonId}`;
    case "anonymous":
      return `ip:${addressBucket(ipAddress)}`;
  }
}

/** IPv6 clients usually own a whole /64; counting single addresses would let them rotate freely. */
function addressBucket(address: string): string {
  if (!address.includes(":")) return address;
  const groups = expandIpv6(address);
  return groups ? `${groups.slice(0, 4).join(":")}::/64` : address;
}

function expandIpv6(address: string): string[] | null {
  const [head = "", tail] = address.split("::");
  const left = head === "" ? [] : head.split(":");
  const right = tail === undefined || tail === "" ? [] : tail.split(":");
  if (tail === undefined && left.length !== 8) return null;
  const missing = 8 - left.length - right.length;
  if (missing < 0) return null;
  return [...left, ...Array<string>(missing).fill("0"), ...right].map((g) => g.toLowerCase());
}

/** The `X-RateLimit-*` headers of a decision, plus `Retry-After` when refused. */
export function rateLimitHeaders(
  decision: RateLimitDecision,
  now: number = Date.now(),
): Record<string, string> {
  if (decision.limit === 0) return {};
  const headers: Record<string, string> = {
    "X-RateLimit-Limit": String(decision.limit),
    "X-RateLimit-Remaining": String(decision.remaining),
    "X-RateLimit-Reset": String(Math.ceil(decision.resetAt.getTime() / 1000)),
  };
  if (!decision.allowed) {
    headers["Retry-After"] = String(Math.max(1, Math.ceil((decision.resetAt.getTime() - now) / 1000)));
  }
  return headers;
}
