import { isIP } from "node:net";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { TargetRecord } from "../../storage/targets.js";
import { endpointHost, hostPrincipalsOf } from "./ssh-policy.js";

const port = fc.option(fc.integer({ min: 1, max: 65_535 }), { nil: undefined });

function targetWith(overrides: Partial<TargetRecord>): TargetRecord {
  const now = new Date(0);
  return {
    id: "00000000-0000-4000-8000-000000000001",
    workspaceId: "00000000-0000-4000-8000-000000000002",
    caId: "00000000-0000-4000-8000-000000000003",
    daemonId: null,
    name: "web-1",
    description: "",
    tags: [],
    endpoints: [],
    metadata: {},
    createdAt: now,
    updatedAt: now,
    ...overrides,
  };
}

describe("host certificate principals", () => {
  it("takes the host out of every endpoint form", () => {
    fc.assert(
      fc.property(fc.oneof(fc.ipV4(), fc.domain()), port, (host, p) => {
        expect(endpointHost(p === undefined ? host : `${host}:${p}`)).toBe(host);
      }),
    );
    fc.assert(
      fc.property(fc.ipV6(), port, (host, p) => {
        expect(endpointHost(p === undefined ? `[${host}]` : `[${host}]:${p}`)).toBe(host);
        expect(endpointHost(host)).toBe(host);
      }),
    );
  });

  it("names the target id first, then each usable name once, never anything ssh could not match", () => {
    const endpoint = fc.oneof(
      fc.tuple(fc.ipV4(), port).map(([h, p]) => (p === undefined ? h : `${h}:${p}`)),
      fc.tuple(fc.domain(), port).map(([h, p]) => (p === undefined ? h : `${h}:${p}`)),
      fc.string({ maxLength: 40 }),
    );
    fc.assert(
      fc.property(
        fc.array(endpoint, { maxLength: 32 }),
        fc.option(fc.oneof(fc.domain(), fc.string({ maxLength: 20 })), { nil: undefined }),
        fc.stringMatching(/^[a-zA-Z0-9][a-zA-Z0-9_-]{0,30}$/),
        (endpoints, hostname, name) => {
          const target = targetWith({
            name,
            endpoints,
            metadata: hostname === undefined ? {} : { hostname },
          });
          const principals = hostPrincipalsOf(target);
          expect(principals[0]).toBe(target.id);
          expect(new Set(principals).size).toBe(principals.length);
          for (const principal of principals.slice(1)) {
            expect(isIP(principal) !== 0 || /^[a-z0-9.-]{1,253}$/i.test(principal)).toBe(true);
          }
          if (/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/i.test(name)) expect(principals).toContain(name);
          for (const e of endpoints) {
            const host = endpointHost(e);
            if (isIP(host) !== 0) expect(principals).toContain(host);
          }
        },
      ),
    );
  });

  it("never names what another target claims, whatever its case, nor the host name a daemon reports", () => {
    const endpoint = fc.oneof(
      fc.tuple(fc.ipV4(), port).map(([h, p]) => (p === undefined ? h : `${h}:${p}`)),
      fc.tuple(fc.domain(), port).map(([h, p]) => (p === undefined ? h : `${h}:${p}`)),
    );
    fc.assert(
      fc.property(
        fc.array(endpoint, { maxLength: 16 }),
        fc.array(fc.oneof(fc.ipV4(), fc.domain()), { maxLength: 8 }),
        fc.domain(),
        (endpoints, claimed, hostname) => {
          const target = targetWith({ endpoints, metadata: { hostname } });
          const elsewhere = new Set(claimed.map((name) => name.toLowerCase()));
          const principals = hostPrincipalsOf(target, elsewhere);
          expect(principals[0]).toBe(target.id);
          for (const principal of principals.slice(1)) {
            expect(elsewhere.has(principal.toLowerCase())).toBe(false);
            expect([target.name, ...endpoints.map(endpointHost)]).toContain(principal);
          }
        },
      ),
    );
  });
});
