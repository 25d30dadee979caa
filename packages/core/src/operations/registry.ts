import { auditOperations } from "../audit/operations.js";
import { accountOperations } from "../auth/account-operations.js";
import { authOperations } from "../auth/operations.js";
import { billingOperations } from "../billing/operations.js";
import { certificateOperations } from "../certificates/operations.js";
import { daemonOperations } from "../daemons/operations.js";
import { licenseOperations } from "../license/operations.js";
import { serviceAccountOperations } from "../service-accounts/operations.js";
import { ssoOperations } from "../sso/operations.js";
import { utilOperations } from "../util/operations.js";
import { workspaceAccessOperations } from "../workspaces/access-operations.js";
import { workspaceOperations } from "../workspaces/operations.js";
import type { AnyOperation } from "./operation.js";

/** Every operation this build implements. RPCs of the contract not listed answer `unimplemented`. */
export const allOperations: readonly AnyOperation[] = [
  ...authOperations,
  ...accountOperations,
  ...workspaceOperations,
  ...workspaceAccessOperations,
  ...certificateOperations,
  ...serviceAccountOperations,
  ...daemonOperations,
  ...utilOperations,
  ...ssoOperations,
  ...billingOperations,
  ...licenseOperations,
  ...auditOperations,
];
