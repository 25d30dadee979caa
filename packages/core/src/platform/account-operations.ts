import { recoveryOperations } from "../auth/recovery.js";
import { backupCodeOperations } from "../credentials/backup-codes.js";
import { passkeyOperations } from "../credentials/passkeys.js";
import { passwordOperations } from "../credentials/password-operations.js";
import { getCliLogin, verifyCliLogin } from "../devices/cli-login.js";
import { deviceOperations } from "../devices/operations.js";
import type { AnyOperation } from "../operations/operation.js";
import { userOperations } from "../users/operations.js";

/** The account operations beyond sign-up and sign-in (issue 6): recovery, credentials, devices, profile. */
export const accountOperations: readonly AnyOperation[] = [
  ...recoveryOperations,
  ...passwordOperations,
  ...passkeyOperations,
  ...backupCodeOperations,
  verifyCliLogin,
  getCliLogin,
  ...deviceOperations,
  ...userOperations,
];
