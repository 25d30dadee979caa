import { describe, expect } from "vitest";
import type { WorkspaceDomainRecord } from "../../storage/domains.js";
import type { TargetRecord } from "../../storage/targets.js";
import {
  aMember,
  anAuthority,
  aUser,
  type ContractContext,
  expectUnique,
  tag,
  timeline,
  uid,
} from "./fixtures.js";

export function runDomainContract(ctx: ContractContext): void {
  domainClaims(ctx);
}

function domainClaims(c: ContractContext): void {
  const { test } = c;

  const at = timeline(Date.UTC(2025, 5, 1, 8, 0, 0, 250));

  function aTarget(workspaceId: string, caId: string, overrides: Partial<TargetRecord> = {}): TargetRecord {
    return {
      id: uid(),
      workspaceId,
      caId,
      daemonId: null,
      name: `db-${tag()}`,
      description: "the Primary database",
      tags: ["prod"],
      endpoints: ["10.0.0.9:4022"],
      metadata: {},
      createdAt: at(20, 2),
      updatedAt: at(20, 2),
      ...overrides,
    };
  }

  function aDomain(
    workspaceId: string,
    overrides: Partial<WorkspaceDomainRecord> = {},
  ): WorkspaceDomainRecord {
    return {
      workspaceId,
      domain: `d${tag()}.example.com`,
      verificationToken: `wap-domain-verification=${tag()}`,
      verifiedAt: null,
      createdAt: at(40, 4),
      updatedAt: at(40, 4),
      ...overrides,
    };
  }

  const s = () => c.storage();

  /** A workspace with its owner, a second member, an SSH authority and a target. */
  async function seedAccess() {
    const seeded = await c.seedWorkspace();
    const ws = seeded.workspace.id;
    const guest = aUser();
    await s().users.insert(guest);
    await s().members.insert(aMember(ws, guest.id, { role: "viewer", createdAt: at(100, 7) }));
    const ca = anAuthority(ws);
    await s().certificateAuthorities.insert(ca);
    const target = aTarget(ws, ca.id);
    await s().targets.insert(target);
    return { ...seeded, ws, guest, ca, target };
  }

  describe("workspace domains", () => {
    test("domains: round-trip, alphabetical list, update, delete; unique per workspace", async () => {
      const { ws } = await seedAccess();
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
      const a = await seedAccess();
      const b = await seedAccess();
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
