import { describe, expect } from "vitest";
import type { WorkspaceInviteRecord } from "../../storage/invites.js";
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

export function runInviteContract(ctx: ContractContext): void {
  inviteLink(ctx);
}

function inviteLink(c: ContractContext): void {
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

  function anInvite(
    workspaceId: string,
    overrides: Partial<WorkspaceInviteRecord> = {},
  ): WorkspaceInviteRecord {
    return {
      workspaceId,
      tokenHash: `hash-${uid()}`,
      role: "viewer",
      createdBy: uid(),
      createdAt: at(50, 5),
      expiresAt: at(50 + 86_400, 6),
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

  describe("workspace settings and invite link", () => {
    test("invites: one per workspace; replace retires the old token; lookup by hash; delete", async () => {
      const a = await seedAccess();
      const b = await seedAccess();
      const first = anInvite(a.ws);
      await s().workspaceInvites.replace(first);
      expect(await s().workspaceInvites.find(a.ws)).toEqual(first);
      expect(await s().workspaceInvites.findByTokenHash(first.tokenHash)).toEqual(first);
      const second = anInvite(a.ws, { role: "editor", expiresAt: at(9000, 9) });
      await s().workspaceInvites.replace(second);
      expect(await s().workspaceInvites.findByTokenHash(first.tokenHash)).toBeNull();
      expect(await s().workspaceInvites.find(a.ws)).toEqual(second);
      await expectUnique(
        s().workspaceInvites.replace(anInvite(b.ws, { tokenHash: second.tokenHash })),
        "workspace_invites.token_hash",
      );
      expect(await s().workspaceInvites.find(b.ws)).toBeNull();
      expect(await s().workspaceInvites.delete(a.ws)).toBe(true);
      expect(await s().workspaceInvites.delete(a.ws)).toBe(false);
      expect(await s().workspaceInvites.findByTokenHash(second.tokenHash)).toBeNull();
    });
  });
}
