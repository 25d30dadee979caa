/**
 * CertificateService.ListIssuedCertificates and GetIssuedCertificate: the issuance ledger, read.
 * Every certificate the workspace's authorities signed, newest first, filtered by authority,
 * subject (who asked), target, type, validity window and revocation; or one entry by its id, or
 * by authority and serial.
 *
 * @module
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  CertificateService,
  type IssuedCertificateSchema,
  IssuedCertificateType,
  IssuedCertificateTypeSchema,
  RevocationFilter,
  RevocationFilterSchema,
  RevocationReason,
} from "@wap/api";
import * as z from "zod";
import { InvalidArgumentError, NotFoundError } from "../errors.js";
import { defineOperation } from "../operations/operation.js";
import { toCertificateLimitsMessage } from "../principals/grant-limits.js";
import type {
  IssuedCertificateKind,
  IssuedCertificateRecord,
  RevocationReasonName,
} from "../storage/certificates.js";
import { defaultPage, enumValue, paging, text, timestamp, uuid } from "../validation/rules.js";
import { optionalId } from "./sign-ssh.js";

export const kindToWire: Record<IssuedCertificateKind, IssuedCertificateType> = {
  ssh_user: IssuedCertificateType.SSH_USER,
  ssh_host: IssuedCertificateType.SSH_HOST,
  x509: IssuedCertificateType.X509,
};
const kindFromWire = new Map(Object.entries(kindToWire).map(([k, v]) => [v, k as IssuedCertificateKind]));

export const reasonToWire: Record<RevocationReasonName, RevocationReason> = {
  unspecified: RevocationReason.UNSPECIFIED,
  key_compromise: RevocationReason.KEY_COMPROMISE,
  affiliation_changed: RevocationReason.AFFILIATION_CHANGED,
  superseded: RevocationReason.SUPERSEDED,
  cessation_of_operation: RevocationReason.CESSATION_OF_OPERATION,
  privilege_withdrawn: RevocationReason.PRIVILEGE_WITHDRAWN,
};
export const reasonFromWire = new Map(
  Object.entries(reasonToWire).map(([k, v]) => [v, k as RevocationReasonName]),
);

/** The API's view of a ledger entry. */
export function toIssuedCertificateMessage(
  entry: IssuedCertificateRecord,
): MessageInitShape<typeof IssuedCertificateSchema> {
  const revokedAt = entry.revokedAt ?? null;
  return {
    id: entry.id,
    workspaceId: entry.workspaceId,
    caId: entry.caId,
    caKeyVersion: entry.caKeyVersion,
    type: kindToWire[entry.kind],
    serial: entry.serial,
    keyFingerprint: entry.keyFingerprint,
    principals: [...entry.principals],
    validAfter: timestampFromDate(entry.validAfter),
    validBefore: timestampFromDate(entry.validBefore),
    requesterType: entry.requesterType,
    requesterId: entry.requesterId,
    targetId: entry.targetId ?? "",
    keyId: entry.keyId,
    createdAt: timestampFromDate(entry.createdAt),
    revoked: revokedAt !== null,
    ...(revokedAt !== null && { revokedAt: timestampFromDate(revokedAt) }),
    revocationReason: reasonToWire[entry.revocationReason ?? "unspecified"],
    revokedBy: entry.revokedBy ?? "",
    ...(entry.limits && { limits: toCertificateLimitsMessage(entry.limits) }),
    singleUse: entry.singleUse === true,
    ...(entry.stepUpId && { stepUpId: entry.stepUpId }),
  };
}

const entryNotFound = (what: string) =>
  new NotFoundError(`issued certificate ${what} not found`, { reason: "ISSUED_CERTIFICATE_NOT_FOUND" });

export const listIssuedCertificates = defineOperation({
  method: CertificateService.method.listIssuedCertificates,
  access: { kind: "workspace", permission: "certificates.read" },
  input: z.object({
    workspaceId: uuid.optional(),
    caId: optionalId,
    subjectId: optionalId,
    targetId: optionalId,
    type: enumValue(IssuedCertificateTypeSchema, { definedOnly: true }).optional(),
    validFrom: timestamp.optional(),
    validUntil: timestamp.optional(),
    revocation: enumValue(RevocationFilterSchema, { definedOnly: true }).optional(),
    ...paging,
  }),
  async run({ input, workspace, services }) {
    if (input.validFrom && input.validUntil && input.validFrom >= input.validUntil) {
      const description = "must be after validFrom";
      throw new InvalidArgumentError(`invalid request: validUntil: ${description}`, {
        violations: [{ field: "validUntil", description }],
      });
    }
    const kind = input.type === undefined ? undefined : kindFromWire.get(input.type);
    const revoked =
      input.revocation === RevocationFilter.REVOKED
        ? true
        : input.revocation === RevocationFilter.NOT_REVOKED
          ? false
          : undefined;
    const page = await services.storage.issuedCertificates.list(workspace.workspaceId, {
      limit: input.limit ?? defaultPage.limit,
      offset: input.offset ?? defaultPage.offset,
      ...(input.caId && { caId: input.caId }),
      ...(input.subjectId && { requesterId: input.subjectId }),
      ...(input.targetId && { targetId: input.targetId }),
      ...(kind && { kind }),
      ...(input.validFrom && { validFrom: input.validFrom }),
      ...(input.validUntil && { validUntil: input.validUntil }),
      ...(revoked !== undefined && { revoked }),
    });
    return { certificates: page.items.map(toIssuedCertificateMessage), total: page.total };
  },
});

export const getIssuedCertificate = defineOperation({
  method: CertificateService.method.getIssuedCertificate,
  access: { kind: "workspace", permission: "certificates.read" },
  input: z.object({
    workspaceId: uuid.optional(),
    id: z.union([z.literal("-"), uuid]),
    caId: optionalId,
    serial: text({ max: 64 }).optional(),
  }),
  async run({ input, workspace, services }) {
    const ledger = services.storage.issuedCertificates;
    if (input.id !== "-") {
      const entry = await ledger.findById(workspace.workspaceId, input.id);
      if (entry === null) throw entryNotFound(input.id);
      return { certificate: toIssuedCertificateMessage(entry) };
    }
    if (!input.caId || !input.serial) {
      const description = 'with id "-", caId and serial name the certificate';
      throw new InvalidArgumentError(`invalid request: serial: ${description}`, {
        violations: [{ field: input.caId ? "serial" : "caId", description }],
      });
    }
    const entry = await ledger.findBySerial(workspace.workspaceId, input.caId, input.serial);
    if (entry === null) throw entryNotFound(`with serial ${input.serial}`);
    return { certificate: toIssuedCertificateMessage(entry) };
  },
});
