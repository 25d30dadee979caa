import { accessRequestOperations } from "../access-requests/operations.js";
import { auditOperations } from "../audit/operations.js";
import { authOperations } from "../auth/operations.js";
import { billingOperations } from "../billing/operations.js";
import { certificateOperations } from "../certificates/operations.js";
import { withDaemonNotifications } from "../daemons/change-notifications.js";
import { daemonOperations } from "../daemons/operations.js";
import { licenseOperations } from "../license/operations.js";
import type { AnyOperation } from "../operations/operation.js";
import { recordingOperations } from "../recordings/operations.js";
import { serviceAccountOperations } from "../service-accounts/operations.js";
import { ssoOperations } from "../sso/operations.js";
import { utilOperations } from "../util/operations.js";
import { webhookOperations } from "../webhooks/operations.js";
import { workspaceOperations } from "../workspaces/operations.js";
import { accountOperations } from "./account-operations.js";
import { daemonProtocolOperations } from "./daemon-protocol-operations.js";
import { workspaceAccessOperations } from "./workspace-access-operations.js";

/** Every operation this build implements. RPCs of the contract not listed answer `unimplemented`. */
// Wrapped so that changes to grants and authorities reach the daemons that enforce them.
export const allOperations: readonly AnyOperation[] = withDaemonNotifications([
  ...authOperations,
  ...accountOperations,
  ...workspaceOperations,
  ...workspaceAccessOperations,
  ...certificateOperations,
  ...serviceAccountOperations,
  ...daemonOperations,
  ...daemonProtocolOperations,
  ...utilOperations,
  ...ssoOperations,
  ...billingOperations,
  ...licenseOperations,
  ...auditOperations,
  ...recordingOperations,
  ...accessRequestOperations,
  ...webhookOperations,
]);

/** The procedure paths callers may use without a credential (sign-up, sign-in, public lookups). */
export function publicProcedures(): ReadonlySet<string> {
  const paths = new Set<string>();
  for (const operation of allOperations) {
    if (operation.access.kind === "public")
      paths.add(`/${operation.method.parent.typeName}/${operation.method.name}`);
  }
  return paths;
}
