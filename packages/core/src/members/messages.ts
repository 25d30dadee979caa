import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { WorkspaceMemberSchema } from "@wap/api";
import { roles } from "../access/permissions.js";
import type { MemberProfileRecord } from "../storage/members.js";

const roleDescriptions = new Map<string, string>(roles.map((role) => [role.name, role.description]));

/** The API's view of a workspace member: the user's public profile and their role. */
export function toWorkspaceMemberMessage(
  profile: MemberProfileRecord,
): MessageInitShape<typeof WorkspaceMemberSchema> {
  const { member, user } = profile;
  return {
    id: user.id,
    workspaceId: member.workspaceId,
    name: user.name,
    username: user.username,
    email: user.email,
    emailVerified: user.emailVerified,
    picture: user.picture,
    roleName: member.role,
    roleDescription: roleDescriptions.get(member.role) ?? "",
    createdAt: timestampFromDate(member.createdAt),
    updatedAt: timestampFromDate(member.updatedAt),
  };
}
