import { accountOperations } from "../auth/account-operations.js";
import { authOperations } from "../auth/operations.js";
import { certificateOperations } from "../certificates/operations.js";
import { daemonOperations } from "../daemons/operations.js";
import { serviceAccountOperations } from "../service-accounts/operations.js";
import { utilOperations } from "../util/operations.js";
import { workspaceOperations } from "../workspaces/operations.js";
import type { AnyOperation } from "./operation.js";

/** Every operation this build implements. RPCs of the contract not listed answer `unimplemented`. */
export const allOperations: readonly AnyOperation[] = [
  ...authOperations,
  ...accountOperations,
  ...workspaceOperations,
  ...certificateOperations,
  ...serviceAccountOperations,
  ...daemonOperations,
  ...utilOperations,
];
