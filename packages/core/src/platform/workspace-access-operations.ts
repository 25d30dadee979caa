/**
 * The operations of issue 5 (who belongs to a workspace and who may reach which target), listed
 * once for the registry: members and ownership, settings, invitations, domains, teams, targets
 * and principals.
 *
 * @module
 */
import { domainOperations } from "../domains/operations.js";
import { invitationOperations } from "../invitations/operations.js";
import { memberOperations } from "../members/operations.js";
import type { AnyOperation } from "../operations/operation.js";
import { principalOperations } from "../principals/operations.js";
import { targetOperations } from "../targets/operations.js";
import { teamOperations } from "../teams/operations.js";
import { updateWorkspaceSettings } from "../workspaces/settings.js";

export const workspaceAccessOperations: readonly AnyOperation[] = [
  ...memberOperations,
  updateWorkspaceSettings,
  ...domainOperations,
  ...invitationOperations,
  ...teamOperations,
  ...targetOperations,
  ...principalOperations,
];
