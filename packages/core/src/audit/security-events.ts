/**
 * Security events in the audit log: failed sign-ins and denied calls. Anyone can cause them, as
 * often as they like, so they must not be a way to flood the log: per kind, subject and client
 * address, at most one entry is written per window (one minute); the ones in between are counted
 * and the next entry says how many there were (`repeats=N` in its resource). The counts live in
 * memory, per server instance, for a bounded number of keys.
 *
 * @module
 */
import { actorOf, type CallContext } from "../context.js";
import type { Services } from "../operations/services.js";
import { appendAudit } from "./record.js";

/** One window per key: at most one entry per kind, subject and address in it. */
export const securityEventWindowMs = 60_000;
/** Keys remembered at once; past it the oldest window is forgotten. */
const maxKeys = 10_000;

export type SecurityEventKind = "sign_in_failed" | "permission_denied";

interface Window {
  readonly startedAt: number;
  repeats: number;
}

/** The resource of a failed sign-in: the method and the address it named, e.g. `password:ada@example.com`. */
export function signInResource(method: string, email: string): string {
  return `sign_in:${method}:${email.toLowerCase()}`;
}

/** The open windows of one platform, by kind, subject and address. */
export type SecurityEventWindows = Map<string, Window>;

export function createSecurityEventWindows(): SecurityEventWindows {
  return new Map();
}

/**
 * Records a security event, unless one of the same kind, subject and address was written in the
 * current window (then it is only counted). Never throws: a lost entry must not change the
 * answer of the call it is about.
 */
export async function recordSecurityEvent(
  services: Services,
  ctx: Pick<CallContext, "caller" | "ipAddress" | "userAgent" | "requestId">,
  event: {
    readonly kind: SecurityEventKind;
    /** What was tried: `account:<email>`, `rpc:<procedure>`. */
    readonly resource: string;
    readonly workspaceId?: string | null;
  },
): Promise<void> {
  const { actorType, actorId } = actorOf(ctx.caller);
  const subject = actorId === "" ? event.resource : `${actorType}:${actorId}`;
  const key = `${event.kind}|${subject}|${ctx.ipAddress}`;
  const now = services.clock.now();
  const windows = services.state.securityEventWindows;
  const open = windows.get(key);
  if (open !== undefined && now.getTime() - open.startedAt < securityEventWindowMs) {
    open.repeats++;
    return;
  }
  windows.delete(key);
  if (windows.size >= maxKeys) windows.delete(windows.keys().next().value as string);
  windows.set(key, { startedAt: now.getTime(), repeats: 0 });
  const repeats = open?.repeats ?? 0;
  await services.storage
    .transaction((tx) =>
      appendAudit(tx, services, ctx, {
        workspaceId: event.workspaceId ?? null,
        actorType,
        actorId,
        action: `security.${event.kind}`,
        resource: repeats > 0 ? `${event.resource} repeats=${repeats}` : event.resource,
        at: now,
        statusCode: event.kind === "sign_in_failed" ? "unauthenticated" : "permission_denied",
      }),
    )
    .catch(() => undefined);
}
