import { describe, expect, it } from "vitest";
import { createMemoryRateLimiters, rateLimitHeaders, rateLimitKey } from "./rate-limit.js";

describe("rate limits", () => {
  it("keys principals by kind and id, anonymous callers by address (IPv6 by /64)", () => {
    expect(rateLimitKey({ kind: "user", userId: "u1", sessionId: "s" }, "1.2.3.4")).toBe("user:u1");
    expect(
      rateLimitKey({ kind: "service_account", serviceAccountId: "a1", workspaceId: "w", role: "viewer" }, ""),
    ).toBe("sa:a1");
    expect(rateLimitKey({ kind: "daemon", daemonId: "d1", workspaceId: "w" }, "")).toBe("daemon:d1");
    expect(rateLimitKey({ kind: "anonymous" }, "1.2.3.4")).toBe("ip:1.2.3.4");
    expect(rateLimitKey({ kind: "anonymous" }, "2001:db8:1:2:3:4:5:6")).toBe("ip:2001:db8:1:2::/64");
    expect(rateLimitKey({ kind: "anonymous" }, "2001:db8::1")).toBe("ip:2001:db8:0:0::/64");
  });

  it("counts down, then refuses until the window ends", async () => {
    const limiters = createMemoryRateLimiters({
      authenticatedPoints: 2,
      anonymousPoints: 1,
      windowSeconds: 60,
    });
    const a = await limiters.authenticated.consume("user:1");
    const b = await limiters.authenticated.consume("user:1");
    const c = await limiters.authenticated.consume("user:1");
    expect([a.allowed, b.allowed, c.allowed]).toEqual([true, true, false]);
    expect([a.remaining, b.remaining, c.remaining]).toEqual([1, 0, 0]);
    expect(a.limit).toBe(2);
    expect((await limiters.authenticated.consume("user:2")).allowed).toBe(true);
    expect((await limiters.anonymous.consume("ip:1")).allowed).toBe(true);
    expect((await limiters.anonymous.consume("ip:1")).allowed).toBe(false);
  });

  it("writes the X-RateLimit headers, and Retry-After when refusing", () => {
    const now = Date.UTC(2030, 0, 1);
    const resetAt = new Date(now + 12_300);
    expect(rateLimitHeaders({ allowed: true, limit: 5, remaining: 4, resetAt }, now)).toEqual({
      "X-RateLimit-Limit": "5",
      "X-RateLimit-Remaining": "4",
      "X-RateLimit-Reset": String(Math.ceil(resetAt.getTime() / 1000)),
    });
    expect(rateLimitHeaders({ allowed: false, limit: 5, remaining: 0, resetAt }, now)["Retry-After"]).toBe(
      "13",
    );
  });

  it("a limit of 0 disables limiting (and its headers)", async () => {
    const limiters = createMemoryRateLimiters({
      authenticatedPoints: 0,
      anonymousPoints: 0,
      windowSeconds: 60,
    });
    const decision = await limiters.anonymous.consume("ip:1");
    expect(decision.allowed).toBe(true);
    expect(rateLimitHeaders(decision)).toEqual({});
  });
});
