/**
 * A token never changes, so a signature checked once stays checked until the token expires. This
 * cache spares the signature check on every request of a busy client; callers still check
 * revocation against storage on every use. Bounded: the oldest entry goes first.
 */
export function cacheVerified<T extends { readonly expiresAt: Date | null }>(
  verify: (token: string, now: Date) => Promise<T>,
  maxEntries = 10_000,
): (token: string, now: Date) => Promise<T> {
  const verified = new Map<string, T>();
  return async (token, now) => {
    const hit = verified.get(token);
    if (hit && (hit.expiresAt === null || hit.expiresAt > now)) return hit;
    const result = await verify(token, now);
    if (verified.size >= maxEntries) verified.delete(verified.keys().next().value as string);
    verified.set(token, result);
    return result;
  };
}
