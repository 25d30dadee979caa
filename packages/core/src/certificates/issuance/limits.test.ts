/**
 * Property tests of grant limits: CIDR blocks normalise and contain what they should, and a
 * certificate never allows what the grant it was signed under does not.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { PlatformError } from "../../errors.js";
import { grantLimitsInput, grantPrincipal } from "../../principals/grant-limits.js";
import type { GrantLimits } from "../../storage/principals.js";
import { grantLimitBounds } from "../../validation/bounds.js";
import { addressCidr, cidrContains, formatCidr, parseCidr } from "../../validation/cidr.js";
import { certificateOptionsOf, chooseGrant } from "./limits.js";

const v4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((p) => p.join("."));
const v6 = fc
  .array(fc.nat(0xffff), { minLength: 8, maxLength: 8 })
  .map((g) => g.map((x) => x.toString(16)).join(":"));
const block = fc.oneof(
  fc.tuple(v4, fc.integer({ min: 0, max: 32 })).map(([a, p]) => `${a}/${p}`),
  fc.tuple(v6, fc.integer({ min: 0, max: 128 })).map(([a, p]) => `${a}/${p}`),
);

const limits: fc.Arbitrary<GrantLimits> = fc.record({
  pinClientAddress: fc.boolean(),
  sourceCidrs: fc
    .array(block, { maxLength: 3 })
    .map((l) => [...new Set(l.map((c) => formatCidr(parseCidr(c)!)))]),
  permitPortForwarding: fc.boolean(),
  permitAgentForwarding: fc.boolean(),
  permitX11Forwarding: fc.boolean(),
  permitPty: fc.boolean(),
  verifyRequired: fc.boolean(),
  skKeysOnly: fc.boolean(),
  commands: fc.uniqueArray(fc.constantFrom("uptime", "df -h", "id", "true"), { maxLength: 3 }),
});

const asked = fc.option(
  fc.record(
    {
      pinClientAddress: fc.boolean(),
      sourceCidrs: fc
        .array(block, { maxLength: 2 })
        .map((l) => [...new Set(l.map((c) => formatCidr(parseCidr(c)!)))]),
      permitPortForwarding: fc.boolean(),
      permitAgentForwarding: fc.boolean(),
      permitX11Forwarding: fc.boolean(),
      permitPty: fc.boolean(),
      verifyRequired: fc.boolean(),
      skKeysOnly: fc.boolean(),
      commands: fc.uniqueArray(fc.constantFrom("uptime", "df -h", "id", "true"), { maxLength: 2 }),
    },
    { requiredKeys: ["sourceCidrs", "commands"] },
  ),
  { nil: undefined },
);

describe("CIDR blocks", () => {
  it("normalise to a fixed point that contains the address they were written from", () => {
    fc.assert(
      fc.property(block, (text) => {
        const parsed = parseCidr(text)!;
        const formatted = formatCidr(parsed);
        expect(parseCidr(formatted)).toEqual(parsed);
        expect(formatCidr(parseCidr(formatted)!)).toBe(formatted);
        const address = text.slice(0, text.indexOf("/"));
        expect(cidrContains(parsed, addressCidr(address)!)).toBe(true);
      }),
    );
  });

  it("refuse what is not an address or block", () => {
    for (const bad of [
      "",
      "10.0.0.0/33",
      "::/129",
      "10.0.0/8",
      "host.example",
      "10.0.0.0/-1",
      "1.2.3.4/ 8",
    ]) {
      expect(parseCidr(bad)).toBeNull();
    }
    expect(grantLimitsInput.safeParse({ sourceCidrs: ["10.0.0.0/33"], commands: [] }).success).toBe(false);
  });

  it("are accepted in a grant up to the bound, never beyond", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: grantLimitBounds.cidrs + 8 }),
        fc.integer({ min: 0, max: grantLimitBounds.commands + 8 }),
        (cidrs, commands) => {
          const parsed = grantLimitsInput.safeParse({
            sourceCidrs: Array.from({ length: cidrs }, (_, i) => `10.${i}.0.0/16`),
            commands: Array.from({ length: commands }, (_, i) => `command ${i}`),
          });
          expect(parsed.success).toBe(
            cidrs <= grantLimitBounds.cidrs && commands <= grantLimitBounds.commands,
          );
        },
      ),
    );
  });

  it("bound the lists a grant holds", () => {
    const many = (n: number, f: (i: number) => string) => Array.from({ length: n }, (_, i) => f(i));
    const at = (cidrs: number, commands: number) =>
      grantLimitsInput.safeParse({
        sourceCidrs: many(cidrs, (i) => `10.0.${i}.0/24`),
        commands: many(commands, (i) => `cmd-${i}`),
      }).success;
    expect(at(grantLimitBounds.cidrs, grantLimitBounds.commands)).toBe(true);
    expect(at(grantLimitBounds.cidrs + 1, 0)).toBe(false);
    expect(at(0, grantLimitBounds.commands + 1)).toBe(false);
    expect(
      grantLimitsInput.safeParse({
        sourceCidrs: [],
        commands: ["x".repeat(grantLimitBounds.commandLength + 1)],
      }).success,
    ).toBe(false);
  });
});

describe("a certificate under a grant", () => {
  it("never allows what the chosen grant does not, and keeps every requirement it has", () => {
    fc.assert(
      fc.property(fc.array(limits, { minLength: 1, maxLength: 3 }), asked, v4, (grants, request, client) => {
        let chosen: ReturnType<typeof chooseGrant>;
        try {
          chosen = chooseGrant(grants, request, client);
        } catch (error) {
          expect(error).toBeInstanceOf(PlatformError);
          expect(["invalid_argument", "permission_denied"]).toContain((error as PlatformError).code);
          return;
        }
        const grant = chosen.grant!;
        const cert = chosen.limits!;
        expect(grants).toContain(grant);
        for (const name of [
          "permitPortForwarding",
          "permitAgentForwarding",
          "permitX11Forwarding",
          "permitPty",
        ] as const) {
          if (cert[name]) expect(grant[name]).toBe(true);
        }
        if (grant.verifyRequired) expect(cert.verifyRequired).toBe(true);
        if (grant.skKeysOnly) expect(cert.skKeysOnly).toBe(true);
        if (grant.commands.length > 0) {
          expect(cert.commands.length).toBeGreaterThan(0);
          for (const c of cert.commands) expect(grant.commands).toContain(c);
        }
        if (grant.pinClientAddress) expect(cert.sourceAddresses).toEqual([client]);
        if (grant.sourceCidrs.length > 0) {
          expect(cert.sourceAddresses.length).toBeGreaterThan(0);
          const outer = grant.sourceCidrs.map((c) => parseCidr(c)!);
          for (const a of cert.sourceAddresses) {
            expect(outer.some((o) => cidrContains(o, parseCidr(a)!))).toBe(true);
          }
        }
        // What sshd reads says the same.
        const { criticalOptions, extensions } = certificateOptionsOf(cert);
        expect("permit-pty" in extensions).toBe(cert.permitPty);
        expect("verify-required" in criticalOptions).toBe(cert.verifyRequired);
        expect(criticalOptions["source-address"] ?? "").toBe(cert.sourceAddresses.join(","));
      }),
    );
  });

  it("goes with a principal that names the grant's limits, and equal limits only", () => {
    fc.assert(
      fc.property(limits, limits, (a, b) => {
        const id = "0b0c7a0e-7b5e-4b0a-9a53-3f0f2d1c5e11";
        expect(grantPrincipal(id, undefined)).toBe(id);
        const same = JSON.stringify(a) === JSON.stringify(b);
        if (same) expect(grantPrincipal(id, a)).toBe(grantPrincipal(id, b));
        expect(grantPrincipal(id, a)).toMatch(/^[A-Za-z0-9][A-Za-z0-9._@+:-]*$/);
      }),
    );
  });
});
