/** Reading and rewriting PASETO v4.public tokens as an attacker without the key can. */

/** The claims of a v4.public token (read, not verified): its payload is the claims, then a 64-byte signature. */
export function pasetoClaims(token: string): Record<string, string> {
  const bytes = Buffer.from(token.split(".")[2]!, "base64url");
  return JSON.parse(bytes.subarray(0, -64).toString()) as Record<string, string>;
}

/** `token` with some claims replaced and its signature and footer kept. */
export function rewrittenClaims(token: string, replace: Record<string, string>): string {
  const [, , payload, footer] = token.split(".") as [string, string, string, string];
  const signature = Buffer.from(payload, "base64url").subarray(-64);
  const message = Buffer.from(JSON.stringify({ ...pasetoClaims(token), ...replace }));
  return `v4.public.${Buffer.concat([message, signature]).toString("base64url")}.${footer}`;
}
