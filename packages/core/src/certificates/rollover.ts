/**
 * CertificateService.RolloverCertificateAuthority: a new key for an authority, optionally of
 * another type or size: the shortcut through every phase of a staged rotation (rotation.ts) in
 * one step, refused while one is under way. The new key signs from the moment the rollover commits; certificates the
 * old key signed stay valid for their lifetime, because relying parties keep trusting it:
 *
 * - The authority's `publicKey` (and `certificate`, for X.509) is the new key's. `keyVersion`
 *   goes up by one; signers are cached per version, so every server instance signs with the new
 *   key as soon as it reads the authority again (each request does).
 * - The old key is kept as a retired key, public half only (the private half is destroyed: it
 *   never signs again), trusted until every certificate it can have signed has expired: the later
 *   of its last recorded certificate's expiry and the rollover time plus the authority's longest
 *   TTL (a request that read the authority just before the rollover may still be signing with the
 *   old key), and never past the old key's own end.
 * - While it is trusted, SignSSHCertificate's `caPublicKey` lists it after the signing key, one
 *   authorized_keys line each: daemons write that text as the CA file their sshd trusts, so users
 *   with certificates from either key log in, and the host certificate is checked against the
 *   first line, the new key. Operators who configure sshd themselves put the same lines into
 *   `TrustedUserCAKeys` and into `@cert-authority` lines of known_hosts. For X.509 the current
 *   and retired CA certificates form the trust bundle (issuance/trust.ts `x509TrustBundle`).
 *
 * @module
 */

import { CertificateKeyTypeSchema, CertificateService } from "@wap/api";
import * as z from "zod";
import { throwIfCancelled } from "../context.js";
import { PlatformError } from "../errors.js";
import { defineOperation } from "../operations/operation.js";
import type { CertificateAuthorityRecord } from "../storage/certificate-authorities.js";
import { enumValue, uuid } from "../validation/rules.js";
import { createAuthorityKey, nextKeySpec, retiredKeyOf } from "./authority-keys.js";
import { authorityNotFound } from "./issuance/resolve.js";
import { keyInUse, keyStorageOf } from "./key-storage.js";
import { authorityMessage } from "./messages.js";
import { assertNoRotation } from "./rotation.js";

/** When the retired key of `ca`, whose last recorded certificate expires at `latest`, stops being trusted. */
export function retiredKeyTrustedUntil(ca: CertificateAuthorityRecord, latest: Date | null, now: Date): Date {
  const longestTtlMs = Math.max(ca.userMaxTtlSeconds, ca.hostMaxTtlSeconds) * 1000;
  const until = Math.max(latest?.getTime() ?? 0, now.getTime() + longestTtlMs);
  return new Date(Math.min(until, ca.notAfter.getTime()));
}

export const rolloverCertificateAuthority = defineOperation({
  method: CertificateService.method.rolloverCertificateAuthority,
  notifiesDaemons: ["authority_targets"],
  access: { kind: "workspace", permission: "certificate_authorities.manage" },
  input: z.object({
    workspaceId: uuid.optional(),
    id: uuid,
    // The contract gives both no rule: 0 and UNSPECIFIED keep the current type (and its size).
    keyBits: z.number().int().optional(),
    keyType: enumValue(CertificateKeyTypeSchema, { definedOnly: true }).optional(),
  }),
  async run({ input, workspace, services, now, audit, ctx }) {
    const workspaceId = workspace.workspaceId;
    const current = await services.storage.certificateAuthorities.findById(workspaceId, input.id);
    if (current === null) throw authorityNotFound(input.id);
    assertNoRotation(current);
    const { algorithm, keyBits } = nextKeySpec(current, input);

    const version = current.keyVersion + 1;
    // The next key lives where the authority's keys live: a PKCS#11 authority's in the token.
    const keyStorage = keyStorageOf(services, current.keyStorage);
    const key = await createAuthorityKey({
      storage: keyStorage,
      caId: current.id,
      keyVersion: version,
      kind: current.authorityType,
      algorithm,
      keyBits,
      name: current.name,
      notBefore: now,
      lifetimeSeconds: current.lifetimeSeconds,
      random: services.random,
    });
    const updated = await keyInUse(keyStorage, key.sealedPrivateKey, () => {
      // Key generation can take seconds (RSA 4096): the client may have given up meanwhile.
      throwIfCancelled(ctx);
      return services.storage.transaction(async (tx) => {
        const replaced = await tx.certificateAuthorities.replaceKey(
          workspaceId,
          current.id,
          current.keyVersion,
          {
            keyType: algorithm,
            keyBits: key.keyBits,
            certificate: key.certificate,
            publicKey: key.publicKey,
            serialNumber: key.serialNumber,
            subject: key.subject,
            notBefore: key.notBefore,
            notAfter: key.notAfter,
            sealedPrivateKey: key.sealedPrivateKey,
          },
          now,
        );
        if (replaced === null) {
          if ((await tx.certificateAuthorities.findById(workspaceId, current.id)) === null) {
            throw authorityNotFound(current.id);
          }
          throw new PlatformError(
            "aborted",
            "another rollover of this certificate authority won the race; retry",
            {
              reason: "CONCURRENT_ROLLOVER",
            },
          );
        }
        const latest = await tx.issuedCertificates.latestExpiry(workspaceId, current.id, current.keyVersion);
        await tx.retiredAuthorityKeys.insert(
          retiredKeyOf(current, now, retiredKeyTrustedUntil(current, latest, services.clock.now())),
        );
        await audit(tx, {
          action: "certificate_authority.rollover",
          resource: `certificate_authority:${current.id}`,
        });
        return replaced;
      });
    });
    // The old key never signs again: a key in a token is destroyed (a sealed one was overwritten).
    await keyStorage.discard(current.sealedPrivateKey).catch(() => undefined);
    return { certificateAuthority: await authorityMessage(services, services.storage, updated) };
  },
});
