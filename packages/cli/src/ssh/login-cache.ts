/**
 * What `wap ssh` last learnt from the server about a destination (`ssh/logins.json`, 0600): the
 * workspace, the target's id, name and endpoints, its SSH authority and key, and the caller's
 * logins there. With a valid certificate of that authority at hand and the known_hosts file
 * written, the next `wap ssh` to it runs ssh without calling the server; with a certificate to
 * issue, it makes that one call. Only logins held outright are kept (no access request, no
 * limits): those take the authority's shared certificate, and what it opens is sshd's decision
 * (the daemon's principals, the revocation list), not this file's.
 *
 * Entries are kept for a while only (an hour), for the signed-in device only, and read as
 * untrusted: every string is checked again with the rules it was checked by when written.
 *
 * @module
 */
import { join } from "node:path";
import type { CliConfig, ConfigStore } from "../config.js";
import { isId, isLoginName, type TargetAddress, targetProblem } from "./targets.js";

/** How long an entry is used before the server is asked again. */
export const loginCacheMaxAgeMs = 60 * 60_000;
/** The most destinations kept; the least recently used go first. */
export const loginCacheMaxEntries = 64;

export interface CachedLogin {
  /** The workspace asked for (`--workspace` or `wap workspace use`, "" for the only one) and the target's name. */
  readonly key: string;
  readonly workspace: { readonly id: string; readonly name: string };
  readonly target: TargetAddress;
  readonly caId: string;
  readonly caPublicKey: string;
  /** Every login granted on the target, in the server's order (the first is the default). */
  readonly logins: readonly string[];
  /** Those of `logins` held outright: no access request needed, no limits. */
  readonly standing: readonly string[];
  /** When the server said so (ms since the epoch). */
  readonly savedAt: number;
}

interface CacheFile {
  readonly server: string;
  readonly userId: string;
  readonly deviceId: string;
  readonly entries: readonly CachedLogin[];
}

/** Who the entries were learnt for: the device signed in, to its server. */
interface Owner {
  readonly server: string;
  readonly userId: string;
  readonly deviceId: string;
}

export function ownerOf(config: CliConfig): Owner | undefined {
  if (config.server === undefined || config.user === undefined || config.deviceId === undefined)
    return undefined;
  return { server: config.server, userId: config.user.id, deviceId: config.deviceId };
}

export const cacheKey = (workspace: string | undefined, target: string) => `${workspace ?? ""}\n${target}`;

const strings = (value: unknown): value is string[] =>
  Array.isArray(value) && value.every((v) => typeof v === "string");

/** Whether `value` is an entry whose every string still has the form wap gives ssh. */
export function isUsableEntry(value: unknown): value is CachedLogin {
  const entry = value as Partial<CachedLogin> | null;
  if (typeof entry !== "object" || entry === null) return false;
  const { workspace, target } = entry;
  return (
    typeof entry.key === "string" &&
    typeof workspace === "object" &&
    workspace !== null &&
    typeof workspace.id === "string" &&
    isId(workspace.id) &&
    typeof workspace.name === "string" &&
    typeof target === "object" &&
    target !== null &&
    typeof target.id === "string" &&
    typeof target.name === "string" &&
    strings(target.endpoints) &&
    target.endpoints.length > 0 &&
    targetProblem(target) === undefined &&
    typeof entry.caId === "string" &&
    isId(entry.caId) &&
    typeof entry.caPublicKey === "string" &&
    strings(entry.logins) &&
    strings(entry.standing) &&
    entry.standing.every((login) => isLoginName(login) && entry.logins!.includes(login)) &&
    typeof entry.savedAt === "number"
  );
}

const cachePath = (store: ConfigStore) => join(store.sshDir, "logins.json");

async function readCache(store: ConfigStore, owner: Owner): Promise<CachedLogin[]> {
  const text = await store.readFile(cachePath(store)).catch(() => undefined);
  if (text === undefined) return [];
  try {
    const file = JSON.parse(text) as Partial<CacheFile>;
    if (file.server !== owner.server || file.userId !== owner.userId || file.deviceId !== owner.deviceId)
      return [];
    return Array.isArray(file.entries) ? file.entries.filter(isUsableEntry) : [];
  } catch {
    return [];
  }
}

/** The entry for `key` if it is younger than the cache's age limit at `now`. */
export async function cachedLogin(
  store: ConfigStore,
  config: CliConfig,
  key: string,
  now = Date.now(),
): Promise<CachedLogin | undefined> {
  const owner = ownerOf(config);
  if (owner === undefined) return undefined;
  const entry = (await readCache(store, owner)).find((e) => e.key === key);
  return entry !== undefined && isFresh(entry, now) ? entry : undefined;
}

export const isFresh = (entry: CachedLogin, now: number) =>
  entry.savedAt <= now && now - entry.savedAt < loginCacheMaxAgeMs;

/** `entries` with `entry` first in place of the one of its key (or without it), at most the limit. */
export function withEntry(
  entries: readonly CachedLogin[],
  key: string,
  entry: CachedLogin | undefined,
): CachedLogin[] {
  const others = entries.filter((e) => e.key !== key);
  return (entry === undefined ? others : [entry, ...others]).slice(0, loginCacheMaxEntries);
}

/** Stores what the server said of `key` (or forgets it, for a login not held outright). */
export async function saveLogin(
  store: ConfigStore,
  config: CliConfig,
  key: string,
  entry: CachedLogin | undefined,
): Promise<void> {
  const owner = ownerOf(config);
  if (owner === undefined) return;
  const entries = await readCache(store, owner);
  if (entry === undefined && !entries.some((e) => e.key === key)) return;
  const file: CacheFile = { ...owner, entries: withEntry(entries, key, entry) };
  await store.writeFile(cachePath(store), `${JSON.stringify(file)}\n`);
}

/**
 * The login to use from an entry: the one asked for, else the default (the first granted), when
 * it is held outright; undefined otherwise (the server is asked, and says why not).
 */
export function cachedLoginName(entry: CachedLogin, requested: string | undefined): string | undefined {
  const login = requested ?? entry.logins[0];
  return login !== undefined && entry.standing.includes(login) ? login : undefined;
}
