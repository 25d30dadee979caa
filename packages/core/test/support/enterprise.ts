/**
 * Helpers of the SSO, billing, licence and audit tests: integration services set on a platform,
 * verified domains and workspace roles written straight to storage.
 */
import type { WorkspaceRole } from "../../src/context.js";
import type { IntegrationServices } from "../../src/operations/integrations.js";
import type { Platform } from "../../src/platform/platform.js";
import type { Storage } from "../../src/storage/storage.js";

export { verifyDomain } from "@wap/test-kit/domains";

/**
 * Sets integration services on a running platform. `createPlatform` does not take them yet
 * (PlatformOptions gains `extends IntegrationServices`); operations read them from
 * `platform.services`, which every call copies, so they apply to the next call.
 */
export function useIntegrations(platform: Platform, integrations: IntegrationServices): void {
  Object.assign(platform.services, integrations);
}

/** Adds an existing user to a workspace with `role`. */
export async function addMember(storage: Storage, workspaceId: string, userId: string, role: WorkspaceRole) {
  const now = new Date();
  await storage.members.insert({ workspaceId, userId, role, createdAt: now, updatedAt: now });
}
