/**
 * Signed checkpoints of a workspace's audit chain: the chain's head (position and hash) signed
 * with the workspace's Ed25519 audit key, whose private half is sealed with the master key like a
 * CA key's. A checkpoint's message is plain text, so `openssl pkeyutl -verify -rawin` checks it
 * with the public key alone.
 *
 * ```
 * wap-audit-checkpoint-v1
 * workspace: <workspace id>
 * position: <n>
 * hash: <hash(n), lower-case hex>
 * signed-at: <ISO 8601 UTC, milliseconds>
 * ```
 *
 * (each line ends with a newline).
 *
 * @module
 */

import { createPrivateKey, generateKeyPairSync, type KeyObject, sign } from "node:crypto";
import { checkpointMessage } from "@wap/audit-chain";
import type { Services } from "../operations/services.js";
import type { AuditChainHead, AuditCheckpointRecord } from "../storage/audit.js";
import type { Repositories } from "../storage/storage.js";

/** The key store context of a workspace's sealed audit key. */
export function auditKeyContext(workspaceId: string): string {
  return `audit-key:${workspaceId}`;
}

/** The workspace's audit key (made on first use: instances racing end up with one). */
export async function auditSigningKey(
  services: Pick<Services, "keyStore" | "clock">,
  tx: Pick<Repositories, "auditCheckpoints">,
  workspaceId: string,
): Promise<{ readonly publicKey: Uint8Array; readonly privateKey: () => Promise<KeyObject> }> {
  let stored = await tx.auditCheckpoints.findKey(workspaceId);
  if (stored === null) {
    const pair = generateKeyPairSync("ed25519");
    const pkcs8 = new Uint8Array(pair.privateKey.export({ type: "pkcs8", format: "der" }));
    const x = pair.publicKey.export({ format: "jwk" }).x ?? "";
    try {
      stored = await tx.auditCheckpoints.insertKeyIfAbsent({
        workspaceId,
        publicKey: new Uint8Array(Buffer.from(x, "base64url")),
        sealedPrivateKey: await services.keyStore.seal(pkcs8, auditKeyContext(workspaceId)),
        createdAt: services.clock.now(),
      });
    } finally {
      pkcs8.fill(0);
    }
  }
  const sealed = stored.sealedPrivateKey;
  return {
    publicKey: stored.publicKey,
    async privateKey() {
      const der = await services.keyStore.open(sealed, auditKeyContext(workspaceId));
      try {
        return createPrivateKey({ key: Buffer.from(der), format: "der", type: "pkcs8" });
      } finally {
        der.fill(0);
      }
    },
  };
}

/** Signs `head` of the workspace's chain now, stores the checkpoint and returns it. */
export async function signCheckpoint(
  services: Pick<Services, "keyStore" | "clock" | "storage">,
  workspaceId: string,
  head: AuditChainHead,
): Promise<AuditCheckpointRecord> {
  const key = await auditSigningKey(services, services.storage, workspaceId);
  const unsigned = { workspaceId, position: head.position, hash: head.hash, signedAt: services.clock.now() };
  const signature = new Uint8Array(sign(null, checkpointMessage(unsigned), await key.privateKey()));
  const checkpoint = { ...unsigned, signature };
  await services.storage.auditCheckpoints.add(checkpoint);
  return checkpoint;
}

/**
 * Signs the head of every chain that moved since its last checkpoint (the server runs this at an
 * interval). Returns how many it signed.
 */
export async function signAuditCheckpoints(
  services: Pick<Services, "keyStore" | "clock" | "storage">,
  options: { readonly batch?: number } = {},
): Promise<number> {
  const batch = options.batch ?? 100;
  let signed = 0;
  for (;;) {
    const heads = await services.storage.auditCheckpoints.unsignedHeads(batch);
    for (const head of heads) {
      await signCheckpoint(services, head.workspaceId, head);
      signed++;
    }
    if (heads.length < batch) return signed;
  }
}
