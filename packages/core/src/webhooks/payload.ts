/**
 * What a receiver gets: a Standard Webhooks message, `{type, timestamp, data}`, whose `data` is
 * the audit entry with its sequence number (its position in the workspace's hash chain) and its
 * hashes, so a receiver can also check the chain.
 *
 * @module
 */
import type { ChainedAuditEventRecord } from "../storage/audit.js";

/** Longest text field of an event as sent; longer ones are cut (and say so), so bodies stay small. */
export const maxEventFieldChars = 1024;

/** Largest body sent: every field at its cap stays under it. */
export const maxWebhookBodyBytes = 64 * 1024;

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");

function capped(value: string, cut: string[], name: string): string {
  if (value.length <= maxEventFieldChars) return value;
  cut.push(name);
  // Cut on a code point boundary: never half a surrogate pair.
  let end = maxEventFieldChars;
  const code = value.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end--;
  return value.slice(0, end);
}

/** The body of the message for one audit entry. */
export function eventBody(entry: ChainedAuditEventRecord): string {
  const cut: string[] = [];
  const data = {
    sequence: entry.position,
    id: entry.id,
    workspaceId: entry.workspaceId,
    timestamp: entry.timestamp.toISOString(),
    actorType: capped(entry.actorType, cut, "actorType"),
    actorId: capped(entry.actorId, cut, "actorId"),
    action: capped(entry.action, cut, "action"),
    resource: capped(entry.resource, cut, "resource"),
    ipAddress: capped(entry.ipAddress, cut, "ipAddress"),
    userAgent: capped(entry.userAgent, cut, "userAgent"),
    statusCode: capped(entry.statusCode, cut, "statusCode"),
    requestId: capped(entry.requestId, cut, "requestId"),
    previousHash: hex(entry.previousHash),
    hash: hex(entry.hash),
    ...(cut.length > 0 && { truncated: cut }),
  };
  return JSON.stringify({ type: data.action, timestamp: data.timestamp, data });
}

/** The body of a test message (outside the sequence). */
export function testBody(workspaceId: string, endpointId: string, at: Date): string {
  const timestamp = at.toISOString();
  return JSON.stringify({ type: "webhook.test", timestamp, data: { workspaceId, endpointId, timestamp } });
}
