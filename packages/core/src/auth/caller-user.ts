import type { CallContext } from "../context.js";
import { NotFoundError } from "../errors.js";
import type { Services } from "../operations/services.js";
import type { Repositories } from "../storage/storage.js";
import type { UserRecord } from "../storage/users.js";

/** The signed-in caller's user record (operations with `callers: ["user"]` only). */
export async function callerUser(
  services: Services,
  ctx: CallContext,
  repositories: Repositories = services.storage,
): Promise<UserRecord> {
  const userId = ctx.caller.kind === "user" ? ctx.caller.userId : "";
  const user = await repositories.users.findById(userId);
  if (!user) throw new NotFoundError("the signed-in user no longer exists");
  return user;
}

/** The caller's session id, when the caller is a signed-in user. */
export function callerSessionId(ctx: CallContext): string | undefined {
  return ctx.caller.kind === "user" ? ctx.caller.sessionId : undefined;
}
