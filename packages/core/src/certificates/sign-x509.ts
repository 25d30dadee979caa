/**
 * CertificateService.SignX509Certificate: a leaf from a PEM CSR, through the same pipeline as SSH.
 *
 * 1. request: usage (unset means client), TTL bounds;
 * 2. name policy for the caller and usage (issuance/x509-policy.ts); server usages need
 *    `certificates.sign`;
 * 3. authority: named or the workspace's default X.509 authority, active and unexpired;
 * 4. CSR: parsed and its signature verified (`invalid_argument` otherwise), key type allowed;
 * 5. options: usage, backdating, lifetime (clamped), then the names checked against the policy;
 * 6. serial (16 random bytes, unique per authority), signed by the cached leaf signer;
 * 7. record: ledger entry and audit event, group-committed.
 *
 * The answer carries the leaf and, as `caChain`, the authority's current certificate.
 *
 * @module
 */
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  CertificateService,
  SignX509CertificateRequest_X509UsageSchema,
  SignX509CertificateRequest_X509Usage as Usage,
} from "@wap/api";
import * as z from "zod";
import { actorOf, throwIfCancelled } from "../context.js";
import { CsrParseError, type ParsedCsr, parseCsr, type X509Usage } from "../crypto/x509/leaf-certificate.js";
import { defineOperation } from "../operations/operation.js";
import { certificateTtlBounds } from "../validation/bounds.js";
import { parseField } from "../validation/parse.js";
import { durationSeconds, enumValue, text, uuid } from "../validation/rules.js";
import { grantedLifetime } from "./issuance/options.js";
import { applySignOptions } from "./issuance/pipeline.js";
import { isSerialCollision, keyIdOf, recordIssuance, SERIAL_ATTEMPTS } from "./issuance/record.js";
import { resolveAuthority } from "./issuance/resolve.js";
import { x509SignerFor } from "./issuance/signers.js";
import {
  authorizeX509Sign,
  ledgerNames,
  resolveX509NamePolicy,
  serverCertificates,
  type X509Draft,
} from "./issuance/x509-policy.js";
import { crlUrlOf } from "./messages.js";
import { signingView } from "./rotation.js";
import { optionalId } from "./sign-ssh.js";

const usages: Readonly<Record<number, X509Usage>> = {
  [Usage.UNSPECIFIED]: "client",
  [Usage.CLIENT_AUTH]: "client",
  [Usage.SERVER_AUTH]: "server",
  [Usage.CLIENT_AND_SERVER]: "both",
};

/** A CSR the parser refuses, as `invalid_argument` with its reason. */
export function parseCsrField(pem: string): ParsedCsr {
  return parseField("csr", "INVALID_CSR", CsrParseError, () => parseCsr(pem));
}

export const signX509Certificate = defineOperation({
  method: CertificateService.method.signX509Certificate,
  // Client certificates naming the caller need only sight of the authorities; server
  // certificates need certificates.sign (issuance/x509-policy.ts).
  access: { kind: "workspace", permission: "certificate_authorities.read", conditions: [serverCertificates] },
  input: z.object({
    workspaceId: uuid.optional(),
    caId: optionalId,
    csr: text({ min: 1, max: 10_000, controlCharacters: "allowed" }),
    usage: enumValue(SignX509CertificateRequest_X509UsageSchema, { definedOnly: true }).optional(),
    ttl: durationSeconds(certificateTtlBounds).optional(),
  }),
  async run(call) {
    const { input, ctx, workspace, services, now } = call;
    const storage = services.storage;
    const workspaceId = workspace.workspaceId;
    const usage = usages[input.usage ?? Usage.UNSPECIFIED]!;

    const policy = await resolveX509NamePolicy(storage, { ctx, workspace, usage });
    const authority = await resolveAuthority(storage, {
      workspaceId,
      kind: "x509",
      caId: input.caId,
      target: undefined,
      now,
    });
    // During a staged rotation the phase decides which key signs this usage.
    const ca = signingView(authority, usage === "client" ? "user" : "host");
    const options = authorizeX509Sign({ policy, usage, ca, now, requestedTtlSeconds: input.ttl });
    const csr = parseCsrField(input.csr);
    const draft = applySignOptions<ParsedCsr, X509Draft>(options, csr, {
      usage,
      // What the CSR asks for; the name policy decides.
      commonName: csr.commonName ?? "",
      sans: {
        dns: [...csr.sans.dns],
        ip: [...csr.sans.ip],
        email: [...csr.sans.email],
        uri: [...csr.sans.uri],
      },
      validAfter: now,
      validBefore: now,
    });

    const signer = await x509SignerFor(services, ca);
    const { actorType, actorId } = actorOf(ctx.caller);
    for (let attempt = 1; ; attempt++) {
      const id = services.random.uuid();
      const leaf = await signer.issue({
        csr,
        subject: { commonName: draft.commonName },
        sans: draft.sans,
        usage: draft.usage,
        notBefore: draft.validAfter,
        notAfter: draft.validBefore,
        serialNumber: services.random.bytes(16),
        crlUrl: crlUrlOf(services, ca.id),
      });
      throwIfCancelled(ctx);
      try {
        await recordIssuance(
          call,
          {
            id,
            workspaceId,
            caId: ca.id,
            caKeyVersion: ca.keyVersion,
            kind: "x509",
            serial: leaf.serialHex,
            keyFingerprint: csr.publicKey.fingerprint,
            principals: ledgerNames(draft),
            validAfter: leaf.notBefore,
            validBefore: leaf.notAfter,
            requesterType: actorType,
            requesterId: actorId,
            targetId: null,
            keyId: keyIdOf(workspaceId, actorType, actorId, id),
            createdAt: now,
          },
          ca.keyType,
        );
      } catch (error) {
        if (isSerialCollision(error) && attempt < SERIAL_ATTEMPTS) continue;
        throw error;
      }
      return {
        caId: ca.id,
        caName: ca.name,
        certificate: leaf.pem,
        caChain: ca.certificate,
        expiresAt: timestampFromDate(leaf.notAfter),
        ...grantedLifetime(draft, now),
      };
    }
  },
});
