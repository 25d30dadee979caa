/**
 * Master key rotation: every sealed value in storage opened with the old key(s) and sealed again
 * with the new one, in one transaction. Either every value moves to the new key or none does.
 *
 * @module
 */
import { auditKeyContext } from "../audit/checkpoints.js";
import { secretContext } from "../auth/signing-keys.js";
import { caKeyContext } from "../certificates/key-storage.js";
import type { KeyStore } from "../crypto/key-store.js";
import { clientSecretContext } from "../sso/operations.js";
import type { SealedValueRef } from "../storage/secrets.js";
import type { Storage } from "../storage/storage.js";
import { webhookSecretContext } from "../webhooks/secrets.js";

/** The key store context a sealed value was sealed under. */
export function sealedValueContext(ref: SealedValueRef): string {
  switch (ref.kind) {
    case "ca_key":
      return caKeyContext(ref.caId, ref.keyVersion);
    case "secret":
      return secretContext(ref.name);
    case "oidc_client_secret":
      return clientSecretContext(ref.workspaceId);
    case "audit_key":
      return auditKeyContext(ref.workspaceId);
    case "webhook_secret":
      return webhookSecretContext(ref.endpointId, ref.version);
  }
}

export interface ResealResult {
  /** How many values were sealed again, by kind. */
  readonly resealed: Readonly<Record<SealedValueRef["kind"], number>>;
}

/**
 * Opens every sealed value with `from` and seals it with `to`, in one transaction. A value that
 * `from` cannot open fails the whole rotation (SealedDataError) and nothing changes.
 */
export async function resealSecrets(storage: Storage, from: KeyStore, to: KeyStore): Promise<ResealResult> {
  return storage.transaction(async (tx) => {
    const resealed = { ca_key: 0, secret: 0, oidc_client_secret: 0, audit_key: 0, webhook_secret: 0 };
    for (const value of await tx.sealedValues.listAll()) {
      const context = sealedValueContext(value.ref);
      const plaintext = await from.open(value.sealed, context);
      try {
        if (await tx.sealedValues.replace(value.ref, await to.seal(plaintext, context))) {
          resealed[value.ref.kind]++;
        }
      } finally {
        plaintext.fill(0);
      }
    }
    return { resealed };
  });
}

/**
 * Opens every sealed value with `keyStore`, changing nothing: throws SealedDataError for the
 * first one it cannot open (a database restored under the wrong master key).
 */
export async function checkSealedValues(storage: Storage, keyStore: KeyStore): Promise<number> {
  const values = await storage.sealedValues.listAll();
  for (const value of values) (await keyStore.open(value.sealed, sealedValueContext(value.ref))).fill(0);
  return values.length;
}
