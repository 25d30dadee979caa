/**
 * The storage contract of domain claims: unique per workspace; one workspace may verify a domain.
 * Registered by `runStorageContract`.
 *
 * @module
 */
import { describe, expect } from "vitest";
import { accessAt, aDomain, type ContractContext, expectUnique, seedAccess, tag } from "./fixtures.js";

export function runDomainContract(ctx: ContractContext): void {
  domainClaims(ctx);
}

function domainClaims(c: ContractContext): void {
  const { test } = c;

  const at = accessAt;

  const s = () => c.storage();

  describe("workspace domains", () => {
    test("domains: round-trip, alphabetical list, update, delete; unique per workspace", async () => {
      const { ws } = await seedAccess(c);
      const later = aDomain(ws, { domain: `z-${tag()}.example.org` });
      const first = aDomain(ws, { domain: `a-${tag()}.example.org` });
      const dotted = aDomain(ws, { domain: `a.${first.domain}` });
      for (const d of [later, first, dotted]) await s().workspaceDomains.insert(d);
      expect(await s().workspaceDomains.find(ws, first.domain)).toEqual(first);
      expect((await s().workspaceDomains.list(ws)).map((d) => d.domain)).toEqual(
        [dotted.domain, first.domain, later.domain].sort(),
      );
      await expectUnique(
        s().workspaceDomains.insert(aDomain(ws, { domain: first.domain })),
        "workspace_domains.domain",
      );
      const verified = await s().workspaceDomains.update(
        ws,
        first.domain,
        { verifiedAt: at(60, 6) },
        at(61, 7),
      );
      expect(verified).toEqual({ ...first, verifiedAt: at(60, 6), updatedAt: at(61, 7) });
      const retokened = await s().workspaceDomains.update(
        ws,
        first.domain,
        { verificationToken: "t2" },
        at(62, 8),
      );
      expect(retokened).toEqual({
        ...first,
        verificationToken: "t2",
        verifiedAt: at(60, 6),
        updatedAt: at(62, 8),
      });
      expect(
        await s().workspaceDomains.update(ws, "nope.example.com", { verificationToken: "x" }, at(63)),
      ).toBeNull();
      expect(await s().workspaceDomains.delete(ws, first.domain)).toBe(true);
      expect(await s().workspaceDomains.delete(ws, first.domain)).toBe(false);
      expect(await s().workspaceDomains.find(ws, first.domain)).toBeNull();
    });

    test("domains: many workspaces may claim a domain, one may verify it", async () => {
      const a = await seedAccess(c);
      const b = await seedAccess(c);
      const domain = `shared-${tag()}.example.net`;
      await s().workspaceDomains.insert(aDomain(a.ws, { domain }));
      await s().workspaceDomains.insert(aDomain(b.ws, { domain }));
      expect(await s().workspaceDomains.update(a.ws, domain, { verifiedAt: at(70) }, at(70))).not.toBeNull();
      await expectUnique(
        s().workspaceDomains.update(b.ws, domain, { verifiedAt: at(71) }, at(71)),
        "workspace_domains.verified_domain",
      );
      expect((await s().workspaceDomains.find(b.ws, domain))?.verifiedAt).toBeNull();
      // Another workspace's claim is invisible.
      expect(await s().workspaceDomains.delete(b.ws, `x${domain}`)).toBe(false);
      expect((await s().workspaceDomains.list(b.ws)).map((d) => d.domain)).toEqual([domain]);
    });
  });
}
