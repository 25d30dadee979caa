import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { WorkspaceSchema } from "@wap/api";
import type { WorkspaceRecord } from "../storage/workspaces.js";

/** The API's view of a workspace. */
export function toWorkspaceMessage(workspace: WorkspaceRecord): MessageInitShape<typeof WorkspaceSchema> {
  return {
    id: workspace.id,
    name: workspace.name,
    description: workspace.description,
    createdBy: workspace.createdBy,
    settings: {
      enrollAutoApprove: workspace.enrollAutoApprove,
      ...(workspace.enrollExpiresAt && { enrollExpiresAt: timestampFromDate(workspace.enrollExpiresAt) }),
      ...(workspace.inviteExpiresAt && { inviteExpiresAt: timestampFromDate(workspace.inviteExpiresAt) }),
    },
    createdAt: timestampFromDate(workspace.createdAt),
    updatedAt: timestampFromDate(workspace.updatedAt),
  };
}
