/**
 * CertificateService.RotateCertificateAuthority: a staged key rotation, one explicit step at a
 * time, each step undoable until the last:
 *
 * | phase | trusted (TrustedUserCAKeys, @cert-authority, X.509 bundle) | signs user / client | signs host / server |
 * |---|---|---|---|
 * | `none` (UNSPECIFIED) | current (+ retired keys still trusted) | current | current |
 * | PUBLISHED | current, next | current | current |
 * | USER_SIGNING | current, next | next | current |
 * | HOST_SIGNING | next, current | next | next |
 * | RETIRED (request only) | next, now current | it | it |
 *
 * Moving to PUBLISHED generates the next key (type and size as asked, else the current ones);
 * each later request names the phase after or before the current one. Moving back to
 * UNSPECIFIED from PUBLISHED discards the next key. RETIRED, from HOST_SIGNING, ends the rotation:
 * the next key becomes the current one (key version + 1) and the old key is retired at once and
 * trusted no more, so certificates it signed stop working (that is the point of retiring it;
 * wait for them to expire, or use RolloverCertificateAuthority, which keeps them trusted).
 * Retiring is final.
 *
 * The trusted list is the signing key of host certificates first (daemons check their host
 * certificate against the first line of `caPublicKey`), then the other key. Relying parties pick
 * the change up as they do any trust change: daemons are told to sync, clients re-read
 * `caPublicKey` or GetCertificateAuthority (`rotationPhase`, `publicKey`, `nextPublicKey`).
 *
 * RolloverCertificateAuthority is the shortcut through all phases in one step; it is refused
 * while a staged rotation is under way.
 *
 * @module
 */
import { CertificateKeyTypeSchema, CertificateService, RotationPhase, RotationPhaseSchema } from "@wap/api";
import * as z from "zod";
import { throwIfCancelled } from "../context.js";
import { FailedPreconditionError, PlatformError } from "../errors.js";
import { defineOperation } from "../operations/operation.js";
import type {
  CertificateAuthorityRecord,
  RotationPhase as Phase,
} from "../storage/certificate-authorities.js";
import { enumValue, uuid } from "../validation/rules.js";
import { createAuthorityKey, nextKeySpec, retiredKeyOf } from "./authority-keys.js";
import { authorityNotFound } from "./issuance/resolve.js";
import { keyInUse, keyStorageOf } from "./key-storage.js";
import { authorityMessage } from "./messages.js";

const phases: readonly Phase[] = ["none", "published", "user_signing", "host_signing"];
const phaseFromWire = new Map<number, Phase | "retired">([
  [RotationPhase.UNSPECIFIED, "none"],
  [RotationPhase.PUBLISHED, "published"],
  [RotationPhase.USER_SIGNING, "user_signing"],
  [RotationPhase.HOST_SIGNING, "host_signing"],
  [RotationPhase.RETIRED, "retired"],
]);
const wireName = (phase: Phase | "retired") =>
  phase === "none" ? "ROTATION_PHASE_UNSPECIFIED" : `ROTATION_PHASE_${phase.toUpperCase()}`;

/** Which certificates a key signs: user (X.509 client) or host (X.509 server) ones. */
export type SigningUse = "user" | "host";

/**
 * The authority as the signer of `use` certificates sees it: during a rotation, the next key's
 * fields and version where the phase has it sign `use` certificates.
 */
export function signingView(ca: CertificateAuthorityRecord, use: SigningUse): CertificateAuthorityRecord {
  const next = ca.nextKey;
  const nextSigns =
    ca.rotationPhase === "host_signing" || (ca.rotationPhase === "user_signing" && use === "user");
  if (next === null || !nextSigns) return ca;
  return { ...ca, ...next, keyVersion: ca.keyVersion + 1 };
}

/** Refuses a one-step rollover while a staged rotation is under way. */
export function assertNoRotation(ca: CertificateAuthorityRecord): void {
  if (ca.rotationPhase !== "none") {
    throw new FailedPreconditionError(
      `certificate authority ${ca.id} is in a staged rotation (${wireName(ca.rotationPhase)}): finish or roll it back with RotateCertificateAuthority first`,
      { reason: "ROTATION_IN_PROGRESS" },
    );
  }
}

const lostRace = () =>
  new PlatformError("aborted", "another change of this certificate authority's keys won the race; retry", {
    reason: "CONCURRENT_ROTATION",
  });

export const rotateCertificateAuthority = defineOperation({
  method: CertificateService.method.rotateCertificateAuthority,
  notifiesDaemons: ["authority_targets"],
  access: { kind: "workspace", permission: "certificate_authorities.manage" },
  input: z.object({
    workspaceId: uuid.optional(),
    id: uuid,
    phase: enumValue(RotationPhaseSchema, { definedOnly: true }).optional(),
    keyType: enumValue(CertificateKeyTypeSchema, { definedOnly: true }).optional(),
    keyBits: z.number().int().optional(),
  }),
  async run({ input, workspace, services, now, audit, ctx }) {
    const workspaceId = workspace.workspaceId;
    const current = await services.storage.certificateAuthorities.findById(workspaceId, input.id);
    if (current === null) throw authorityNotFound(input.id);
    const target = phaseFromWire.get(input.phase ?? RotationPhase.UNSPECIFIED)!;
    const at = phases.indexOf(current.rotationPhase);
    const forward: Phase | "retired" = at + 1 < phases.length ? phases[at + 1]! : "retired";
    const back: Phase | undefined = at > 0 ? phases[at - 1] : undefined;
    if (target !== forward && target !== back) {
      const allowed = [forward, ...(back ? [back] : [])].map(wireName).join(" or ");
      throw new FailedPreconditionError(
        `certificate authority ${current.id} is in rotation phase ${wireName(current.rotationPhase)}: the phase can move to ${allowed}, not ${wireName(target)}`,
        { reason: "ROTATION_PHASE_NOT_ADJACENT" },
      );
    }

    let nextKey = current.nextKey;
    // A PKCS#11 authority's next key is generated in the token too.
    const keyStorage = keyStorageOf(services, current.keyStorage);
    let generated: Uint8Array | undefined;
    if (target === "published" && current.rotationPhase === "none") {
      const { algorithm, keyBits } = nextKeySpec(current, input);
      const key = await createAuthorityKey({
        storage: keyStorage,
        caId: current.id,
        keyVersion: current.keyVersion + 1,
        kind: current.authorityType,
        algorithm,
        keyBits,
        name: current.name,
        notBefore: now,
        lifetimeSeconds: current.lifetimeSeconds,
        random: services.random,
      });
      generated = key.sealedPrivateKey;
      nextKey = { ...key, keyType: algorithm };
    }

    const commit = () => {
      throwIfCancelled(ctx);
      return services.storage.transaction(async (tx) => {
        const expected = { phase: current.rotationPhase, keyVersion: current.keyVersion };
        let result: CertificateAuthorityRecord | null;
        if (target === "retired") {
          result = await tx.certificateAuthorities.replaceKey(
            workspaceId,
            current.id,
            current.keyVersion,
            nextKey!,
            now,
          );
          if (result !== null) {
            // Retired on purpose: no longer trusted from this moment.
            await tx.retiredAuthorityKeys.insert(retiredKeyOf(current, now, now));
          }
        } else {
          result = await tx.certificateAuthorities.setRotation(
            workspaceId,
            current.id,
            expected,
            { phase: target, nextKey: target === "none" ? null : nextKey },
            now,
          );
        }
        if (result === null) {
          if ((await tx.certificateAuthorities.findById(workspaceId, current.id)) === null) {
            throw authorityNotFound(current.id);
          }
          throw lostRace();
        }
        await audit(tx, {
          action: "certificate_authority.rotate",
          resource: `certificate_authority:${current.id}`,
        });
        return result;
      });
    };
    const updated = generated === undefined ? await commit() : await keyInUse(keyStorage, generated, commit);
    // A key that will not sign again: the retired one, or the next key of a rotation rolled back.
    const dropped =
      target === "retired"
        ? current.sealedPrivateKey
        : target === "none"
          ? current.nextKey?.sealedPrivateKey
          : undefined;
    if (dropped !== undefined) await keyStorage.discard(dropped).catch(() => undefined);
    return { certificateAuthority: await authorityMessage(services, services.storage, updated) };
  },
});
