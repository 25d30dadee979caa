/**
 * WorkspaceDomainService: domains a workspace claims, addressed by name. A claim is verified by
 * publishing its `verificationToken` as a TXT record at `_wap-challenge.<domain>` (or at the
 * domain itself) and calling VerifyWorkspaceDomain.
 *
 * Several workspaces may claim a domain (so a claim reveals nothing about other tenants), but
 * only one can have it verified: verifying a domain another workspace proved is `already_exists`,
 * which only someone who controls the domain's DNS can learn. Regenerating the token keeps a
 * verified claim verified; the new token is what the next verification checks.
 *
 * @module
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { type WorkspaceDomainSchema, WorkspaceDomainService } from "@wap/api";
import * as z from "zod";
import { AlreadyExistsError, FailedPreconditionError, NotFoundError } from "../errors.js";
import { toHex } from "../lib/bytes.js";
import { defineOperation } from "../operations/operation.js";
import type { Random } from "../runtime.js";
import type { WorkspaceDomainRecord } from "../storage/domains.js";
import { UniqueViolationError } from "../storage/storage.js";
import { workspaceDomain } from "../validation/bounds.js";
import { hostname } from "../validation/hostname.js";
import { uuid } from "../validation/rules.js";
import { dnsResolverOf, hasVerificationRecord, verificationRecordPrefix } from "./dns.js";

function toWorkspaceDomainMessage(d: WorkspaceDomainRecord): MessageInitShape<typeof WorkspaceDomainSchema> {
  return {
    domain: d.domain,
    workspaceId: d.workspaceId,
    verificationToken: d.verificationToken,
    ...(d.verifiedAt && { verifiedAt: timestampFromDate(d.verifiedAt) }),
    createdAt: timestampFromDate(d.createdAt),
    updatedAt: timestampFromDate(d.updatedAt),
  };
}

/** The whole TXT value to publish: a prefix (so it is recognisable in a zone) and 128 random bits. */
const newToken = (random: Random) => `wap-domain-verification=${toHex(random.bytes(16))}`;

const domainNotFound = (domain: string) =>
  new NotFoundError(`domain ${domain} not found`, { reason: "DOMAIN_NOT_FOUND" });

const workspaceId = uuid.optional();

export const getWorkspaceDomain = defineOperation({
  method: WorkspaceDomainService.method.getWorkspaceDomain,
  access: { kind: "workspace", permission: "domains.read" },
  input: z.object({ workspaceId, domain: hostname }),
  async run({ input, workspace, services }) {
    const found = await services.storage.workspaceDomains.find(workspace.workspaceId, input.domain);
    if (!found) throw domainNotFound(input.domain);
    return { domain: toWorkspaceDomainMessage(found) };
  },
});

export const listWorkspaceDomains = defineOperation({
  method: WorkspaceDomainService.method.listWorkspaceDomains,
  access: { kind: "workspace", permission: "domains.read" },
  input: z.object({ workspaceId }),
  async run({ workspace, services }) {
    const domains = await services.storage.workspaceDomains.list(workspace.workspaceId);
    return { domains: domains.map(toWorkspaceDomainMessage) };
  },
});

export const createWorkspaceDomain = defineOperation({
  method: WorkspaceDomainService.method.createWorkspaceDomain,
  access: { kind: "workspace", permission: "domains.manage" },
  input: z.object({ workspaceId, domain: workspaceDomain.pipe(hostname) }),
  async run({ input, workspace, services, now, audit }) {
    const record: WorkspaceDomainRecord = {
      workspaceId: workspace.workspaceId,
      domain: input.domain,
      verificationToken: newToken(services.random),
      verifiedAt: null,
      createdAt: now,
      updatedAt: now,
    };
    try {
      await services.storage.transaction(async (tx) => {
        await tx.workspaceDomains.insert(record);
        await audit(tx, { action: "domain.create", resource: `domain:${input.domain}` });
      });
    } catch (error) {
      if (error instanceof UniqueViolationError) {
        throw new AlreadyExistsError(`this workspace already claims ${input.domain}`, {
          reason: "DOMAIN_ALREADY_CLAIMED",
        });
      }
      throw error;
    }
    return { domain: toWorkspaceDomainMessage(record) };
  },
});

export const deleteWorkspaceDomain = defineOperation({
  method: WorkspaceDomainService.method.deleteWorkspaceDomain,
  access: { kind: "workspace", permission: "domains.manage" },
  input: z.object({ workspaceId, domain: hostname }),
  async run({ input, workspace, services, audit }) {
    await services.storage.transaction(async (tx) => {
      if (!(await tx.workspaceDomains.delete(workspace.workspaceId, input.domain))) {
        throw domainNotFound(input.domain);
      }
      await audit(tx, { action: "domain.delete", resource: `domain:${input.domain}` });
    });
    return {};
  },
});

export const verifyWorkspaceDomain = defineOperation({
  method: WorkspaceDomainService.method.verifyWorkspaceDomain,
  access: { kind: "workspace", permission: "domains.manage" },
  input: z.object({ workspaceId, domain: hostname }),
  async run({ input, workspace, services, now, audit }) {
    const claim = await services.storage.workspaceDomains.find(workspace.workspaceId, input.domain);
    if (!claim) throw domainNotFound(input.domain);
    // DNS is asked outside any transaction: a slow server must not hold database locks.
    const proven = await hasVerificationRecord(
      dnsResolverOf(services),
      claim.domain,
      claim.verificationToken,
    );
    if (!proven) {
      throw new FailedPreconditionError(
        `no TXT record "${claim.verificationToken}" found at ${verificationRecordPrefix}${claim.domain} or ${claim.domain}`,
        { reason: "DOMAIN_NOT_VERIFIED" },
      );
    }
    try {
      const verified = await services.storage.transaction(async (tx) => {
        const current = await tx.workspaceDomains.find(workspace.workspaceId, input.domain);
        if (!current) throw domainNotFound(input.domain);
        if (current.verificationToken !== claim.verificationToken) {
          throw new FailedPreconditionError("the verification token changed during verification; try again", {
            reason: "DOMAIN_TOKEN_CHANGED",
          });
        }
        const result = await tx.workspaceDomains.update(
          workspace.workspaceId,
          input.domain,
          { verifiedAt: current.verifiedAt ?? now },
          now,
        );
        await audit(tx, { action: "domain.verify", resource: `domain:${input.domain}` });
        return result ?? current;
      });
      return { domain: toWorkspaceDomainMessage(verified) };
    } catch (error) {
      if (error instanceof UniqueViolationError) {
        throw new AlreadyExistsError(`${input.domain} is verified by another workspace`, {
          reason: "DOMAIN_VERIFIED_ELSEWHERE",
        });
      }
      throw error;
    }
  },
});

export const regenerateWorkspaceDomainToken = defineOperation({
  method: WorkspaceDomainService.method.regenerateWorkspaceDomainToken,
  access: { kind: "workspace", permission: "domains.manage" },
  input: z.object({ workspaceId, domain: hostname }),
  async run({ input, workspace, services, now, audit }) {
    const updated = await services.storage.transaction(async (tx) => {
      const result = await tx.workspaceDomains.update(
        workspace.workspaceId,
        input.domain,
        { verificationToken: newToken(services.random) },
        now,
      );
      if (!result) throw domainNotFound(input.domain);
      await audit(tx, { action: "domain.regenerate_token", resource: `domain:${input.domain}` });
      return result;
    });
    return { domain: toWorkspaceDomainMessage(updated) };
  },
});

export const domainOperations = [
  getWorkspaceDomain,
  listWorkspaceDomains,
  createWorkspaceDomain,
  deleteWorkspaceDomain,
  verifyWorkspaceDomain,
  regenerateWorkspaceDomainToken,
];
