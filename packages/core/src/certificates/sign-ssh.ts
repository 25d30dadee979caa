/**
 * CertificateService.SignSSHCertificate: user and host certificates, as an ordered pipeline.
 *
 * 1. request: type (unset means host for daemons, user for everyone else), ids, TTL bounds;
 * 2. subject: who may have what (issuance/ssh-policy.ts), the target of host certificates;
 * 3. authority: named, the target's, or the workspace default (issuance/resolve.ts);
 * 4. authorise: the sign options for this subject and authority;
 * 5. key: parsed strictly (`invalid_argument`), its type allowed by the authority;
 * 6. options: template, backdating, lifetime (clamped to the maximum and the authority's end);
 *    A user certificate for a `login` of the target is signed under the caller's grant of that
 *    login and carries its limits (issuance/limits.ts); a grant requiring a step-up signs only
 *    under a completed one, single-use and valid 60 s (step-up.ts);
 * 7. serial (random uint64, unique per authority) and key id (`wap:<workspace>:<requester
 *    type>:<requester id>:<ledger id>`), signed by the cached signer of the current key;
 * 8. record: ledger entry and audit event, group-committed; the answer waits for the commit.
 *
 * @module
 */
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  CertificateService,
  SignSSHCertificateRequest_CertificateType as CertificateType,
  SignSSHCertificateRequest_CertificateTypeSchema,
} from "@wap/api";
import * as z from "zod";
import { actorOf, type CallerKind, throwIfCancelled } from "../context.js";
import type { SshCertificateType } from "../crypto/ssh/certificate.js";
import {
  type ParsedSshPublicKey,
  parseSshPublicKey,
  SshKeyParseError,
} from "../crypto/ssh/parse-public-key.js";
import { InvalidArgumentError, PermissionDeniedError, PlatformError } from "../errors.js";
import { defineOperation, type OperationCall } from "../operations/operation.js";
import { type GrantLimitsInput, grantLimitsInput, grantPrincipal } from "../principals/grant-limits.js";
import type { IssuedCertificateRecord } from "../storage/certificates.js";
import type { SubjectRef } from "../storage/principals.js";
import { certificateTtlBounds, principalUsername } from "../validation/bounds.js";
import { parseField } from "../validation/parse.js";
import { durationSeconds, enumValue, text, uuid } from "../validation/rules.js";
import { approvalFor, approvalWindow, keyIdUnder, usedBy } from "./access-request-approval.js";
import {
  type ChosenGrant,
  chooseGrant,
  grantLimitsOption,
  grantsOfLogin,
  singleUseOption,
  skKeysOnlyOption,
} from "./issuance/limits.js";
import { grantedLifetime } from "./issuance/options.js";
import { applySignOptions } from "./issuance/pipeline.js";
import {
  isSerialCollision,
  keyIdOf,
  randomSshSerial,
  recordIssuance,
  SERIAL_ATTEMPTS,
} from "./issuance/record.js";
import { resolveAuthority } from "./issuance/resolve.js";
import { sshSignerFor } from "./issuance/signers.js";
import {
  authorizeSshSign,
  hostCertificates,
  resolveSshSubject,
  type SshDraft,
} from "./issuance/ssh-policy.js";
import { retiredKeysOf, sshTrustedKeysText } from "./issuance/trust.js";
import { signingView } from "./rotation.js";
import { checkStepUp, claimStepUp, stepUpValidity } from "./step-up.js";

/** An id the clients may send as an explicit empty string to mean "none" (docs/agent-protocol.md). */
export const optionalId = z.union([z.literal("").transform(() => undefined), uuid]).optional();

function certificateType(value: number | undefined, caller: CallerKind): SshCertificateType {
  if (value === CertificateType.USER) return "user";
  if (value === CertificateType.HOST) return "host";
  // The contract gives `type` no rule; daemons ask for nothing but host certificates.
  return caller === "daemon" ? "host" : "user";
}

/** A public key the parser refuses, as `invalid_argument` with its reason. */
export function parsePublicKeyField(line: string): ParsedSshPublicKey {
  return parseField("publicKey", "INVALID_PUBLIC_KEY", SshKeyParseError, () => parseSshPublicKey(line));
}

/** Records on the request (read again: it may have changed) that a certificate was issued under it. */
async function recordUse(
  call: Pick<OperationCall<unknown>, "services" | "audit" | "workspace" | "now">,
  requestId: string,
  actorId: string,
  certificateId: string,
): Promise<void> {
  await call.services.storage.transaction(async (tx) => {
    const request = await tx.accessRequests.findById(call.workspace.workspaceId, requestId);
    if (!request || !(await tx.accessRequests.update(usedBy(request, actorId, certificateId, call.now)))) {
      throw new PlatformError(
        "aborted",
        "the access request changed meanwhile; ask for the certificate again",
        {
          reason: "ACCESS_REQUEST_CHANGED",
        },
      );
    }
    await call.audit(tx, { action: "access_request.use", resource: `access_request:${requestId}` });
  });
}

/** Whether `login` and `limits` may be sent, and the grant a user certificate for a login is signed under. */
async function underGrant(
  call: Pick<OperationCall<unknown>, "services" | "workspace" | "now" | "ctx"> & {
    readonly input: { readonly login?: string | undefined; readonly limits?: GrantLimitsInput | undefined };
  },
  type: SshCertificateType,
  targetId: string | undefined,
): Promise<ChosenGrant | undefined> {
  const { input, ctx } = call;
  const field = (name: string, description: string) =>
    new InvalidArgumentError(`invalid request: ${name}: ${description}`, {
      violations: [{ field: name, description }],
    });
  if (input.login === undefined) {
    if (input.limits !== undefined) throw field("limits", "needs login: limits narrow a grant of a login");
    return undefined;
  }
  if (type !== "user") throw field("login", "is only for user certificates");
  if (targetId === undefined) throw field("targetId", "is required with login");
  const caller = ctx.caller;
  if (caller.kind !== "user" && caller.kind !== "service_account") return undefined;
  const subject: SubjectRef =
    caller.kind === "user"
      ? { kind: "user", id: caller.userId }
      : { kind: "service_account", id: caller.serviceAccountId };
  const grants = await grantsOfLogin(call.services.storage, {
    workspaceId: call.workspace.workspaceId,
    targetId,
    login: input.login,
    subject,
    at: call.now,
  });
  if (grants.length === 0) {
    throw new PermissionDeniedError(`you hold no grant of login '${input.login}' on this target now`, {
      reason: "NO_GRANT_OF_LOGIN",
    });
  }
  return chooseGrant(grants, input.limits, ctx.ipAddress);
}

/** The target a single-use certificate is bound to: user certificates naming a target only. */
function singleUseTarget(type: SshCertificateType, targetId: string | undefined): string {
  const field = (name: string, description: string) =>
    new InvalidArgumentError(`invalid request: ${name}: ${description}`, {
      violations: [{ field: name, description }],
    });
  if (type !== "user") throw field("singleUse", "is only for user certificates");
  if (targetId === undefined) throw field("targetId", "is required for single-use certificates");
  return targetId;
}

export const signSshCertificate = defineOperation({
  method: CertificateService.method.signSSHCertificate,
  // Whoever may see the workspace's authorities may ask for a user certificate naming themselves;
  // host certificates need more, checked in issuance/ssh-policy.ts.
  access: {
    kind: "workspace",
    permission: "certificate_authorities.read",
    callers: ["user", "service_account", "daemon"],
    conditions: [hostCertificates],
  },
  input: z.object({
    workspaceId: uuid.optional(),
    caId: optionalId,
    targetId: optionalId,
    type: enumValue(SignSSHCertificateRequest_CertificateTypeSchema, { definedOnly: true }).optional(),
    publicKey: text({ min: 1, max: 10_000, controlCharacters: "allowed" }),
    ttl: durationSeconds(certificateTtlBounds).optional(),
    login: principalUsername.optional(),
    limits: grantLimitsInput.optional(),
    singleUse: z.boolean().optional(),
    stepUpId: optionalId,
  }),
  async run(call) {
    const { input, ctx, workspace, services, now } = call;
    const storage = services.storage;
    const workspaceId = workspace.workspaceId;
    const type = certificateType(input.type, ctx.caller.kind);

    const subject = await resolveSshSubject(storage, { ctx, workspace, type, targetId: input.targetId });
    const authority = await resolveAuthority(storage, {
      workspaceId,
      kind: "ssh",
      caId: input.caId,
      target: subject.target,
      now,
    });
    // During a staged rotation the phase decides which key signs this type.
    const ca = signingView(authority, type);
    const options = authorizeSshSign({ subject, ca, now, requestedTtlSeconds: input.ttl });
    // A user certificate for a target the caller reaches through an approved access request
    // ends with the approval.
    const approval =
      type === "user" && subject.target && ctx.caller.kind === "user"
        ? await approvalFor(storage, workspaceId, subject.target.id, ctx.caller.userId, now)
        : null;
    if (approval) options.push(approvalWindow(approval));
    const chosen = await underGrant(call, type, subject.target?.id);
    if (chosen) {
      options.push(
        skKeysOnlyOption(chosen.limits),
        grantLimitsOption({
          principal: grantPrincipal(subject.subjectId, chosen.grant),
          limits: chosen.limits,
          ca,
        }),
      );
    }
    // A grant requiring a step-up signs only under a completed one: single-use, 60 s.
    const stepUp = await checkStepUp(call, {
      required: chosen?.limits?.requireStepUp === true,
      stepUpId: input.stepUpId,
      targetId: subject.target?.id,
      login: input.login,
    });
    if (stepUp) options.push(stepUpValidity(now));
    const singleUse = input.singleUse === true || stepUp !== undefined;
    if (singleUse) options.push(singleUseOption(singleUseTarget(type, subject.target?.id)));
    const key = parsePublicKeyField(input.publicKey);
    const draft = applySignOptions<ParsedSshPublicKey, SshDraft>(options, key, {
      type,
      principals: [],
      validAfter: now,
      validBefore: now,
      criticalOptions: {},
      extensions: {},
    });

    const [signer, retired] = await Promise.all([
      sshSignerFor(services, ca),
      retiredKeysOf(services, storage, authority),
    ]);
    const { actorType, actorId } = actorOf(ctx.caller);
    // The ledger id is the step-up's record of the certificate: one id for every attempt.
    const id = services.random.uuid();
    for (let attempt = 1; ; attempt++) {
      const serial = randomSshSerial(services);
      const usual = keyIdOf(workspaceId, actorType, actorId, id);
      const keyId = approval ? keyIdUnder(usual, approval) : usual;
      const signedCertificate = await signer.signAsync({
        publicKey: key,
        type: draft.type,
        serial,
        keyId,
        principals: draft.principals,
        validAfter: draft.validAfter,
        validBefore: draft.validBefore,
        criticalOptions: draft.criticalOptions,
        extensions: draft.extensions,
      });
      const entry: IssuedCertificateRecord = {
        id,
        workspaceId,
        caId: ca.id,
        caKeyVersion: ca.keyVersion,
        kind: draft.type === "user" ? "ssh_user" : "ssh_host",
        serial: serial.toString(),
        keyFingerprint: key.fingerprint,
        principals: draft.principals,
        validAfter: draft.validAfter,
        validBefore: draft.validBefore,
        requesterType: actorType,
        requesterId: actorId,
        targetId: subject.target?.id ?? null,
        keyId,
        createdAt: now,
        ...(chosen?.limits && { limits: chosen.limits }),
        ...(singleUse && { singleUse }),
        ...(stepUp && { stepUpId: stepUp.stepUp.id }),
      };
      // Nothing is recorded for a caller that has gone away.
      throwIfCancelled(ctx);
      // The request names the certificate before it is recorded: one that is never recorded is
      // skipped when the request's certificates are revoked, one that is can never escape it.
      if (approval) await recordUse(call, approval.id, actorId, id);
      // Claimed before it is recorded, as above: a login's certificate is signed once per step-up.
      if (stepUp && attempt === 1) await claimStepUp(call, stepUp, id);
      try {
        await recordIssuance(call, entry, ca.keyType);
      } catch (error) {
        if (isSerialCollision(error) && attempt < SERIAL_ATTEMPTS) continue;
        throw error;
      }
      return {
        caId: ca.id,
        caName: ca.name,
        caPublicKey: sshTrustedKeysText(authority, retired, now),
        signedCertificate,
        expiresAt: timestampFromDate(draft.validBefore),
        ...grantedLifetime(draft, now),
      };
    }
  },
});
