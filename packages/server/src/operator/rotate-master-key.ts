/**
 * `wap-server rotate-master-key`: every sealed secret (CA private keys, the token signing key,
 * OIDC client secrets) opened with the old master key and sealed again under the new one, in one
 * transaction, on SQLite and PostgreSQL alike.
 *
 * Two ways, by configuration:
 * - With `WAP_PREVIOUS_MASTER_KEY` (several instances, no downtime): the instances already run
 *   with the new key as `WAP_MASTER_KEY` and the old one as `WAP_PREVIOUS_MASTER_KEY`; this
 *   re-seals whatever is still under the old key, after which the old key can be dropped.
 * - With a key file and nothing else (one instance, stopped): a new key is generated, every
 *   secret re-sealed under it, and the key file replaced. The new key is written beside the file
 *   (`<file>.new`) before the transaction commits, so it is never lost.
 *
 * @module
 */
import { rename, rm, writeFile } from "node:fs/promises";
import {
  createMasterKeyStore,
  formatMasterKey,
  generateMasterKey,
  type ResealResult,
  resealSecrets,
} from "@wap/core";
import type { Storage } from "@wap/core/storage";
import { OperatorError } from "./backup.js";

export type RotationPlan =
  /** Re-seal under `masterKey` what is sealed under it or under `previousKey`. */
  | { readonly kind: "finish"; readonly masterKey: Uint8Array; readonly previousKey: Uint8Array }
  /** Generate a new key, re-seal under it, and replace `keyFile`. */
  | { readonly kind: "replace-file"; readonly masterKey: Uint8Array; readonly keyFile: string };

export interface RotationOutcome extends ResealResult {
  /** The file now holding the new key (replace-file), or undefined. */
  readonly keyFile: string | undefined;
}

export async function rotateMasterKey(storage: Storage, plan: RotationPlan): Promise<RotationOutcome> {
  if (plan.kind === "finish") {
    const from = createMasterKeyStore({
      masterKey: plan.masterKey,
      previousKeys: [{ masterKey: plan.previousKey }],
    });
    const result = await resealSecrets(storage, from, createMasterKeyStore({ masterKey: plan.masterKey }));
    return { ...result, keyFile: undefined };
  }
  const next = generateMasterKey();
  const staged = `${plan.keyFile}.new`;
  try {
    await writeFile(staged, `${formatMasterKey(next)}\n`, { mode: 0o600, flag: "wx" });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") {
      throw new OperatorError(
        `${staged} exists: an earlier rotation stopped half-way. If the server starts with ${plan.keyFile}, delete ${staged} and rotate again; otherwise the secrets are under the key in ${staged}: move it over ${plan.keyFile}`,
      );
    }
    throw error;
  }
  let result: ResealResult;
  try {
    result = await resealSecrets(
      storage,
      createMasterKeyStore({ masterKey: plan.masterKey }),
      createMasterKeyStore({ masterKey: next }),
    );
  } catch (error) {
    // Nothing committed: the old key still opens everything.
    await rm(staged, { force: true });
    throw error;
  }
  await rename(staged, plan.keyFile);
  next.fill(0);
  return { ...result, keyFile: plan.keyFile };
}
