import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { UserSchema } from "@wap/api";
import type { UserRecord } from "../storage/users.js";

/** The API's view of a user. */
export function toUserMessage(user: UserRecord): MessageInitShape<typeof UserSchema> {
  return {
    id: user.id,
    name: user.name,
    username: user.username,
    email: user.email,
    emailVerified: user.emailVerified,
    picture: user.picture,
    createdAt: timestampFromDate(user.createdAt),
    updatedAt: timestampFromDate(user.updatedAt),
    enableEmailRecovery: user.enableEmailRecovery,
  };
}
