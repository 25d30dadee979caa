/**
 * An endpoint's event types: audit actions (`team.create`) or prefixes (`team.*`, every action
 * under `team.`). No types: every event.
 *
 * @module
 */
import * as z from "zod";
import { text } from "../validation/rules.js";

export const eventTypePattern = /^[a-z_]+(\.[a-z_]+)*(\.\*)?$/;

/** At most this many types per endpoint. */
export const maxEventTypes = 50;

export const eventType = text({
  min: 1,
  max: 100,
  pattern: eventTypePattern,
  patternHint: "must be an audit action such as team.create, or a prefix such as team.*",
});

export const eventTypes = z
  .array(eventType)
  .max(maxEventTypes, `must list at most ${maxEventTypes} event types`);

/** Whether an event of `action` goes to an endpoint listening to `types`. */
export function eventTypeMatches(types: readonly string[], action: string): boolean {
  if (types.length === 0) return true;
  return types.some((type) => (type.endsWith(".*") ? action.startsWith(type.slice(0, -1)) : type === action));
}
