/**
 * CertificateService, authority management: create, get, list, update and delete SSH and X.509
 * certificate authorities. At most one authority per workspace and kind is the default; the
 * first one of a kind becomes it. An authority a target uses is not deleted. Rollover and
 * signing are in rollover.ts, sign-ssh.ts and sign-x509.ts.
 *
 * @module
 */

import {
  AuthorityType,
  AuthorityTypeSchema,
  CertificateKeyTypeSchema,
  CertificateService,
  KeyStorage,
  KeyStorageSchema,
} from "@wap/api";
import * as z from "zod";
import { throwIfCancelled } from "../context.js";
import { AlreadyExistsError, FailedPreconditionError, NotFoundError } from "../errors.js";
import { defineOperation } from "../operations/operation.js";
import type { Services } from "../operations/services.js";
import type {
  AuthorityKind,
  CertificateAuthorityRecord,
  KeyAlgorithm,
  Repositories,
} from "../storage/index.js";
import { UniqueViolationError } from "../storage/storage.js";
import { caLifetimeBounds, certificateTtlBounds, description, plainName } from "../validation/bounds.js";
import { durationSeconds, enumValue, uuid } from "../validation/rules.js";
import { createAuthorityKey } from "./authority-keys.js";
import { becomesDefault } from "./default-authority.js";
import { keyStorageOf } from "./key-storage.js";
import { getIssuedCertificate, listIssuedCertificates } from "./ledger.js";
import { authorityMessage, keyAlgorithmFromWire } from "./messages.js";
import { caDefaults, checkCertificateOptions, checkTtlOrder } from "./policy.js";
import { getRevocationList, revokeCertificate } from "./revocation.js";
import { rolloverCertificateAuthority } from "./rollover.js";
import { rotateCertificateAuthority } from "./rotation.js";
import { signSshCertificate } from "./sign-ssh.js";
import { signX509Certificate } from "./sign-x509.js";

const keyType = enumValue(CertificateKeyTypeSchema, { definedOnly: true, notUnspecified: true }).transform(
  (value) => keyAlgorithmFromWire.get(value) as KeyAlgorithm,
);
const ttl = durationSeconds(certificateTtlBounds);
const options = z.record(z.string(), z.string());

const settingsFields = {
  allowedKeyTypes: z.array(keyType).max(3),
  lifetime: durationSeconds(caLifetimeBounds).optional(),
  userDefaultTtl: ttl.optional(),
  userMaxTtl: ttl.optional(),
  hostDefaultTtl: ttl.optional(),
  hostMaxTtl: ttl.optional(),
  userExtensions: options,
  userCriticalOptions: options,
};

const notFound = (id: string) =>
  new NotFoundError(`certificate authority ${id} not found`, { reason: "CERTIFICATE_AUTHORITY_NOT_FOUND" });
const nameTaken = (name: string) =>
  new AlreadyExistsError(`a certificate authority named '${name}' already exists in this workspace`, {
    reason: "CERTIFICATE_AUTHORITY_NAME_TAKEN",
  });

/**
 * Runs a write that may set a default authority. Two concurrent writers can both clear the old
 * default and both try to set theirs; the unique index lets one win, and the loser runs again,
 * now seeing the winner's row, so exactly one default remains and neither request fails.
 */
async function withDefaultRetry<T>(services: Services, write: (tx: Repositories) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await services.storage.transaction(write);
    } catch (error) {
      const defaultRace = error instanceof UniqueViolationError && error.constraint.includes("default");
      if (!defaultRace || attempt >= 5) throw error;
    }
  }
}

export const createCertificateAuthority = defineOperation({
  method: CertificateService.method.createCertificateAuthority,
  access: { kind: "workspace", permission: "certificate_authorities.manage" },
  input: z.object({
    workspaceId: uuid.optional(),
    name: plainName,
    description: description.optional(),
    keyType,
    keyBits: z.number().int().optional(),
    isDefault: z.boolean().optional(),
    authorityType: enumValue(AuthorityTypeSchema, { definedOnly: true }).optional(),
    keyStorage: enumValue(KeyStorageSchema, { definedOnly: true }).optional(),
    ...settingsFields,
  }),
  async run({ input, workspace, services, now, audit, ctx }) {
    const kind: AuthorityKind = input.authorityType === AuthorityType.X509 ? "x509" : "ssh";
    const settings = {
      lifetimeSeconds: input.lifetime ?? caDefaults.lifetimeSeconds,
      userDefaultTtlSeconds:
        input.userDefaultTtl ?? Math.min(caDefaults.userDefaultTtlSeconds, input.userMaxTtl ?? Infinity),
      userMaxTtlSeconds:
        input.userMaxTtl ?? Math.max(caDefaults.userMaxTtlSeconds, input.userDefaultTtl ?? 0),
      hostDefaultTtlSeconds:
        input.hostDefaultTtl ?? Math.min(caDefaults.hostDefaultTtlSeconds, input.hostMaxTtl ?? Infinity),
      hostMaxTtlSeconds:
        input.hostMaxTtl ?? Math.max(caDefaults.hostMaxTtlSeconds, input.hostDefaultTtl ?? 0),
    };
    checkTtlOrder(settings);
    const userExtensions =
      Object.keys(input.userExtensions).length > 0 ? input.userExtensions : caDefaults.userExtensions;
    checkCertificateOptions(userExtensions, input.userCriticalOptions);

    // Refused before any work when the server has no token for it.
    const keyStorage = keyStorageOf(services, input.keyStorage === KeyStorage.PKCS11 ? "pkcs11" : "software");
    const id = services.random.uuid();
    const key = await createAuthorityKey({
      storage: keyStorage,
      caId: id,
      keyVersion: 1,
      kind,
      algorithm: input.keyType,
      keyBits: input.keyBits,
      name: input.name,
      notBefore: now,
      lifetimeSeconds: settings.lifetimeSeconds,
      random: services.random,
    });
    try {
      // Key generation can take seconds (RSA 4096): the client may have given up meanwhile.
      throwIfCancelled(ctx);
      const created = await withDefaultRetry(services, async (tx) => {
        const existing = await tx.certificateAuthorities.list(workspace.workspaceId);
        const isDefault = becomesDefault(existing, kind, input.isDefault);
        if (isDefault) await tx.certificateAuthorities.clearDefault(workspace.workspaceId, kind, now);
        const record: CertificateAuthorityRecord = {
          id,
          workspaceId: workspace.workspaceId,
          name: input.name,
          description: input.description ?? "",
          authorityType: kind,
          keyType: input.keyType,
          keyBits: key.keyBits,
          certificate: key.certificate,
          publicKey: key.publicKey,
          serialNumber: key.serialNumber,
          subject: key.subject,
          notBefore: key.notBefore,
          notAfter: key.notAfter,
          isActive: true,
          isDefault,
          allowedKeyTypes:
            input.allowedKeyTypes.length > 0
              ? [...new Set(input.allowedKeyTypes)]
              : caDefaults.allowedKeyTypes,
          ...settings,
          userExtensions,
          userCriticalOptions: input.userCriticalOptions,
          sealedPrivateKey: key.sealedPrivateKey,
          keyVersion: 1,
          keyStorage: keyStorage.kind,
          rotationPhase: "none",
          nextKey: null,
          createdAt: now,
          updatedAt: now,
        };
        await tx.certificateAuthorities.insert(record);
        await audit(tx, { action: "certificate_authority.create", resource: `certificate_authority:${id}` });
        return record;
      });
      return { certificateAuthority: await authorityMessage(services, services.storage, created) };
    } catch (error) {
      // No row holds the new key: a key in a token would be left behind.
      await keyStorage.discard(key.sealedPrivateKey);
      if (error instanceof UniqueViolationError && error.constraint.endsWith(".name"))
        throw nameTaken(input.name);
      throw error;
    }
  },
});

export const getCertificateAuthority = defineOperation({
  method: CertificateService.method.getCertificateAuthority,
  access: {
    kind: "workspace",
    permission: "certificate_authorities.read",
    callers: ["user", "service_account", "daemon"],
  },
  input: z.object({ workspaceId: uuid.optional(), id: uuid }),
  async run({ input, workspace, services }) {
    const ca = await services.storage.certificateAuthorities.findById(workspace.workspaceId, input.id);
    if (!ca) throw notFound(input.id);
    return { certificateAuthority: await authorityMessage(services, services.storage, ca) };
  },
});

export const listCertificateAuthorities = defineOperation({
  method: CertificateService.method.listCertificateAuthorities,
  access: {
    kind: "workspace",
    permission: "certificate_authorities.read",
    callers: ["user", "service_account", "daemon"],
  },
  input: z.object({ workspaceId: uuid.optional() }),
  async run({ workspace, services }) {
    const cas = await services.storage.certificateAuthorities.list(workspace.workspaceId);
    return {
      certificateAuthorities: await Promise.all(
        cas.map((ca) => authorityMessage(services, services.storage, ca)),
      ),
    };
  },
});

export const updateCertificateAuthority = defineOperation({
  method: CertificateService.method.updateCertificateAuthority,
  notifiesDaemons: ["authority_targets"],
  access: { kind: "workspace", permission: "certificate_authorities.manage" },
  input: z.object({
    workspaceId: uuid.optional(),
    id: uuid,
    name: plainName.optional(),
    description: description.optional(),
    isActive: z.boolean().optional(),
    isDefault: z.boolean().optional(),
    ...settingsFields,
  }),
  async run({ input, workspace, services, now, audit }) {
    try {
      const updated = await withDefaultRetry(services, async (tx) => {
        const current = await tx.certificateAuthorities.findById(workspace.workspaceId, input.id);
        if (!current) throw notFound(input.id);
        // Lists and maps have no presence on the wire: empty means "leave as it is".
        const patch = {
          ...(input.name !== undefined && { name: input.name }),
          ...(input.description !== undefined && { description: input.description }),
          ...(input.isActive !== undefined && { isActive: input.isActive }),
          ...(input.isDefault !== undefined && { isDefault: input.isDefault }),
          ...(input.allowedKeyTypes.length > 0 && { allowedKeyTypes: [...new Set(input.allowedKeyTypes)] }),
          ...(input.lifetime !== undefined && { lifetimeSeconds: input.lifetime }),
          ...(input.userDefaultTtl !== undefined && { userDefaultTtlSeconds: input.userDefaultTtl }),
          ...(input.userMaxTtl !== undefined && { userMaxTtlSeconds: input.userMaxTtl }),
          ...(input.hostDefaultTtl !== undefined && { hostDefaultTtlSeconds: input.hostDefaultTtl }),
          ...(input.hostMaxTtl !== undefined && { hostMaxTtlSeconds: input.hostMaxTtl }),
          ...(Object.keys(input.userExtensions).length > 0 && { userExtensions: input.userExtensions }),
          ...(Object.keys(input.userCriticalOptions).length > 0 && {
            userCriticalOptions: input.userCriticalOptions,
          }),
        };
        const next = { ...current, ...patch };
        checkTtlOrder(next);
        checkCertificateOptions(next.userExtensions, next.userCriticalOptions);
        if (patch.isDefault === true && !current.isDefault) {
          await tx.certificateAuthorities.clearDefault(workspace.workspaceId, current.authorityType, now);
        }
        const result = await tx.certificateAuthorities.update(workspace.workspaceId, input.id, patch, now);
        await audit(tx, {
          action: "certificate_authority.update",
          resource: `certificate_authority:${input.id}`,
        });
        return result ?? next;
      });
      return { certificateAuthority: await authorityMessage(services, services.storage, updated) };
    } catch (error) {
      if (error instanceof UniqueViolationError && error.constraint.endsWith(".name"))
        throw nameTaken(input.name ?? "");
      throw error;
    }
  },
});

export const deleteCertificateAuthority = defineOperation({
  method: CertificateService.method.deleteCertificateAuthority,
  notifiesDaemons: ["authority_targets"],
  access: { kind: "workspace", permission: "certificate_authorities.manage" },
  input: z.object({ workspaceId: uuid.optional(), id: uuid }),
  async run({ input, workspace, services, audit }) {
    await services.storage.transaction(async (tx) => {
      // Its targets' sshd trust it and their host certificates come from it: move them first.
      const targets = await tx.targets.countByCa(workspace.workspaceId, input.id);
      if (targets > 0) {
        throw new FailedPreconditionError(
          `certificate authority ${input.id} is in use by ${targets} target(s): give them another authority first`,
          { reason: "CERTIFICATE_AUTHORITY_IN_USE" },
        );
      }
      if (!(await tx.certificateAuthorities.delete(workspace.workspaceId, input.id)))
        throw notFound(input.id);
      await audit(tx, {
        action: "certificate_authority.delete",
        resource: `certificate_authority:${input.id}`,
      });
    });
    return {};
  },
});

export const certificateOperations = [
  createCertificateAuthority,
  getCertificateAuthority,
  listCertificateAuthorities,
  updateCertificateAuthority,
  deleteCertificateAuthority,
  rolloverCertificateAuthority,
  rotateCertificateAuthority,
  signSshCertificate,
  signX509Certificate,
  listIssuedCertificates,
  getIssuedCertificate,
  revokeCertificate,
  getRevocationList,
];
