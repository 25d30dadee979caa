/**
 * Daemon and target names from a machine's hostname: cleaned up to fit the
 * target-name pattern `^[a-zA-Z0-9][a-zA-Z0-9-_]*$` (dots become dashes, so `web-1.prod` and
 * `web-1.staging` stay apart), then made unique in the workspace with a `-2`, `-3`... suffix.
 *
 * @module
 */
import type { Repositories } from "../storage/storage.js";
import { resourceNamePattern } from "../validation/bounds.js";

/** Room for a suffix inside the 256-character name limit, and short enough to type. */
const maxBaseLength = 63;
/** The name when the hostname has nothing usable (missing header, only symbols). */
export const fallbackDaemonName = "daemon";

/** A valid target name made from `hostname`, lower case. */
export function nameFromHostname(hostname: string | undefined): string {
  const cleaned = (hostname ?? "")
    .trim()
    .toLowerCase()
    .replace(/\.+$/, "")
    .replace(/[^a-z0-9_-]+/g, "-")
    .replace(/-{2,}/g, "-")
    .replace(/^[^a-z0-9]+/, "")
    .slice(0, maxBaseLength)
    .replace(/[-_]+$/, "");
  return resourceNamePattern.test(cleaned) ? cleaned : fallbackDaemonName;
}

/** `base`, or `base-N` with the smallest N >= 2 that no target of the workspace has. */
export async function uniqueTargetName(
  repos: Repositories,
  workspaceId: string,
  base: string,
): Promise<string> {
  const taken = new Set<string>();
  for (let offset = 0; ; offset += 100) {
    const page = await repos.targets.list(workspaceId, { limit: 100, offset, query: base });
    for (const target of page.items) taken.add(target.name.toLowerCase());
    if (offset + page.items.length >= page.total || page.items.length === 0) break;
  }
  if (!taken.has(base)) return base;
  for (let n = 2; ; n++) {
    const candidate = `${base}-${n}`;
    if (!taken.has(candidate)) return candidate;
  }
}
