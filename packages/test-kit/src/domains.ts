/** Verified domains written straight to storage, as a finished VerifyWorkspaceDomain leaves them. */
import type { Storage } from "@wap/core/storage";

/** Marks `domain` verified for the workspace. */
export async function verifyDomain(storage: Storage, workspaceId: string, domain: string, at = new Date()) {
  await storage.workspaceDomains.insert({
    workspaceId,
    domain,
    verificationToken: `token-${domain}`,
    verifiedAt: at,
    createdAt: at,
    updatedAt: at,
  });
}
