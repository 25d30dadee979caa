/**
 * Revocation: CertificateService.RevokeCertificate and GetRevocationList, the revocation of every
 * live certificate of a subject that loses access, and the lists relying parties read.
 *
 * - SSH authorities publish an OpenSSH KRL (crypto/ssh/krl.ts): the revoked serials under every
 *   key the authority has trusted at the moment (current, incoming, retired but still trusted),
 *   for sshd's `RevokedKeys`. Daemons are told with a REVOCATIONS notification and fetch it again.
 * - X.509 authorities publish a CRL signed by the current key, by GetRevocationList and
 *   anonymously at `<public URL>/v1/crl/<ca id>.crl` (DER), the URL each leaf names in its CRL
 *   distribution point.
 *
 * An entry leaves the lists once its certificate has expired: sshd and TLS refuse it anyway.
 *
 * @module
 */
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { CertificateService, RevocationReasonSchema } from "@wap/api";
import * as z from "zod";
import { actorOf } from "../context.js";
import { encodeKrl } from "../crypto/ssh/krl.js";
import { InvalidArgumentError } from "../errors.js";
import { decodeBase64Lenient } from "../lib/base64.js";
import type { AuditEntry } from "../operations/operation.js";
import { defineOperation } from "../operations/operation.js";
import type { Services } from "../operations/services.js";
import type { CertificateAuthorityRecord } from "../storage/certificate-authorities.js";
import type {
  IssuedCertificateRecord,
  RevocationReasonName,
  RevocationSelector,
} from "../storage/certificates.js";
import type { Repositories } from "../storage/storage.js";
import { enumValue, text, uuid } from "../validation/rules.js";
import { authorityNotFound } from "./issuance/resolve.js";
import { x509SignerFor } from "./issuance/signers.js";
import { retiredKeysOf, stillTrusted } from "./issuance/trust.js";
import { reasonFromWire, toIssuedCertificateMessage } from "./ledger.js";
import { crlUrlOf } from "./messages.js";
import { optionalId } from "./sign-ssh.js";

/** How long a CRL says it is current: relying parties fetch again within a day. */
const CRL_VALIDITY_SECONDS = 24 * 3600;

/** One audit entry per authority whose list changed: it is what tells that authority's daemons. */
export function revocationAuditEntries(revoked: readonly IssuedCertificateRecord[]): AuditEntry[] {
  return [...new Set(revoked.map((entry) => `${entry.workspaceId}/${entry.caId}`))].map((key) => {
    const [workspaceId, caId] = key.split("/") as [string, string];
    return { action: "certificate.revoke", resource: `certificate_authority:${caId}`, workspaceId };
  });
}

/**
 * Revokes every live certificate `subjectId` (a user or service account) asked for in the
 * workspace, inside the caller's transaction: the subject loses access and its certificates
 * together. Records the audit entries that tell the daemons.
 */
export async function revokeSubjectCertificates(
  tx: Repositories,
  audit: (tx: Repositories, entry: AuditEntry) => Promise<void>,
  params: { workspaceId: string; subjectId: string; cause: string; now: Date },
): Promise<IssuedCertificateRecord[]> {
  const revoked = await tx.issuedCertificates.revoke(
    params.workspaceId,
    { by: "requester", requesterId: params.subjectId },
    { revokedAt: params.now, reason: "affiliation_changed", revokedBy: `system:${params.cause}` },
  );
  for (const entry of revocationAuditEntries(revoked)) await audit(tx, entry);
  return revoked;
}

/** The authorized_keys lines whose certificates the KRL must cover: every key still trusted. */
function sshKeyBlobs(
  ca: CertificateAuthorityRecord,
  retired: readonly { publicKey: string }[],
): Uint8Array[] {
  const lines = [
    ca.publicKey,
    ...(ca.nextKey ? [ca.nextKey.publicKey] : []),
    ...retired.map((k) => k.publicKey),
  ];
  return lines.map((line) => decodeBase64Lenient(line.trim().split(/\s+/)[1] ?? "") ?? new Uint8Array(0));
}

/** An authority's revocation list at `now`. */
export async function revocationListOf(
  services: Services,
  storage: Repositories,
  ca: CertificateAuthorityRecord,
  now: Date,
): Promise<{ bytes: Uint8Array; format: "openssh-krl" | "x509-crl"; entries: number }> {
  const revoked = await storage.issuedCertificates.listRevoked(ca.workspaceId, ca.id, now);
  // Lists only grow between expiries and are regenerated on demand: the time is a fine version.
  const version = BigInt(Math.floor(now.getTime() / 1000));
  if (ca.authorityType === "ssh") {
    const retired = stillTrusted(await retiredKeysOf(services, storage, ca), now);
    const serials = revoked.map((entry) => BigInt(entry.serial));
    const bytes = encodeKrl({
      version,
      generatedAt: now,
      comment: `wap ${ca.id}`,
      certificates: sshKeyBlobs(ca, retired).map((caKeyBlob) => ({ caKeyBlob, serials })),
    });
    return { bytes, format: "openssh-krl", entries: revoked.length };
  }
  const signer = await x509SignerFor(services, ca);
  const bytes = await signer.signCrl({
    entries: revoked.map((entry) => ({
      serialHex: entry.serial,
      revokedAt: entry.revokedAt ?? now,
      reason: entry.revocationReason ?? "unspecified",
    })),
    thisUpdate: now,
    nextUpdate: new Date(now.getTime() + CRL_VALIDITY_SECONDS * 1000),
    crlNumber: version,
  });
  return { bytes, format: "x509-crl", entries: revoked.length };
}

/**
 * The DER CRL of X.509 authority `caId` for the anonymous public endpoint, or null when there is
 * no X.509 authority of that id (the endpoint answers 404 alike for any other case).
 */
export async function publicCrl(services: Services, caId: string): Promise<Uint8Array | null> {
  if (!uuid.safeParse(caId).success) return null;
  const ca = await services.storage.certificateAuthorities.findForPublication(caId);
  if (ca === null || ca.authorityType !== "x509") return null;
  return (await revocationListOf(services, services.storage, ca, services.clock.now())).bytes;
}

const fingerprint = text({
  max: 100,
  pattern: /^SHA256:[A-Za-z0-9+/]{43}=?$/,
  patternHint: "SHA256:<base64>, as ssh-keygen -l prints it",
});

export const revokeCertificate = defineOperation({
  method: CertificateService.method.revokeCertificate,
  notifiesDaemons: ["revocations"],
  access: { kind: "workspace", permission: "certificates.revoke" },
  input: z.object({
    workspaceId: uuid.optional(),
    caId: optionalId,
    serial: z
      .union([
        z.literal("").transform(() => undefined),
        text({ max: 64, pattern: /^[0-9a-f]+$/, patternHint: "decimal (SSH) or lower-case hex (X.509)" }),
      ])
      .optional(),
    keyFingerprint: z.union([z.literal("").transform(() => undefined), fingerprint]).optional(),
    reason: enumValue(RevocationReasonSchema, { definedOnly: true }).optional(),
  }),
  async run({ input, workspace, services, now, audit, ctx }) {
    const workspaceId = workspace.workspaceId;
    const invalid = (field: string, description: string) =>
      new InvalidArgumentError(`invalid request: ${field}: ${description}`, {
        violations: [{ field, description }],
      });
    let selector: RevocationSelector;
    if (input.serial !== undefined && input.keyFingerprint !== undefined) {
      throw invalid("serial", "give serial (with caId) or keyFingerprint, not both");
    } else if (input.serial !== undefined) {
      if (input.caId === undefined)
        throw invalid("caId", "required with serial: serials are unique per authority");
      selector = { by: "serial", caId: input.caId, serial: input.serial };
    } else if (input.keyFingerprint !== undefined) {
      selector = { by: "key", keyFingerprint: input.keyFingerprint, ...(input.caId && { caId: input.caId }) };
    } else {
      throw invalid("serial", "give serial (with caId) or keyFingerprint");
    }
    const reason: RevocationReasonName = reasonFromWire.get(input.reason ?? 0) ?? "unspecified";
    const { actorType, actorId } = actorOf(ctx.caller);
    const revoked = await services.storage.transaction(async (tx) => {
      if (input.caId !== undefined) {
        const ca = await tx.certificateAuthorities.findById(workspaceId, input.caId);
        if (ca === null) throw authorityNotFound(input.caId);
        if (selector.by === "serial")
          selector = { ...selector, serial: canonicalSerial(ca.authorityType, selector.serial) };
      }
      const done = await tx.issuedCertificates.revoke(workspaceId, selector, {
        revokedAt: now,
        reason,
        revokedBy: `${actorType}:${actorId}`,
      });
      for (const entry of revocationAuditEntries(done)) await audit(tx, entry);
      return done;
    });
    return { revoked: revoked.map(toIssuedCertificateMessage) };
  },
});

/**
 * A serial as the ledger keeps it: SSH serials in decimal, X.509 serials as the bytes of the
 * positive integer in lower-case hex (`0e18…`, as `openssl x509 -serial` prints them). Leading
 * zeros a person typed or left out do not change which certificate is meant.
 */
function canonicalSerial(authorityType: "ssh" | "x509", serial: string): string {
  const digits = serial.replace(/^0+(?=.)/, "");
  return authorityType === "x509" && digits.length % 2 === 1 ? `0${digits}` : digits;
}

export const getRevocationList = defineOperation({
  method: CertificateService.method.getRevocationList,
  access: {
    kind: "workspace",
    permission: "certificate_authorities.read",
    callers: ["user", "service_account", "daemon"],
  },
  input: z.object({ workspaceId: uuid.optional(), caId: uuid }),
  async run({ input, workspace, services, now }) {
    const ca = await services.storage.certificateAuthorities.findById(workspace.workspaceId, input.caId);
    if (ca === null) throw authorityNotFound(input.caId);
    const list = await revocationListOf(services, services.storage, ca, now);
    return {
      revocationList: list.bytes,
      format: list.format,
      entries: list.entries,
      generatedAt: timestampFromDate(now),
      crlUrl: ca.authorityType === "x509" ? crlUrlOf(services, ca.id) : "",
    };
  },
});
