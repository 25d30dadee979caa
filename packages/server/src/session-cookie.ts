/**
 * The `session` cookie: the access token for browsers. Set by Login and RefreshToken, cleared by
 * Logout, on Connect and REST alike. HttpOnly so scripts cannot read it, SameSite=Lax so other
 * sites cannot send it with their POSTs, Secure whenever browsers come by https (TLS here, an https
 * public URL, or a trusted proxy saying so).
 *
 * @module
 */
import type { DescMethod } from "@bufbuild/protobuf";
import { AuthService } from "@wap/api";
import { procedureOf } from "@wap/core";

export const sessionCookieName = "session";

/** The value of the `session` cookie in a `Cookie` header, if any. */
export function readSessionCookie(cookieHeader: string | string[] | undefined): string | undefined {
  if (cookieHeader === undefined) return undefined;
  const headers = Array.isArray(cookieHeader) ? cookieHeader : cookieHeader ? [cookieHeader] : [];
  for (const header of headers) {
    for (const pair of header.split(";")) {
      const eq = pair.indexOf("=");
      if (eq < 0 || pair.slice(0, eq).trim() !== sessionCookieName) continue;
      const value = pair.slice(eq + 1).trim();
      return value.startsWith('"') && value.endsWith('"') ? value.slice(1, -1) : value;
    }
  }
  return undefined;
}

export interface CookieSettings {
  /** Add `Secure` (the server speaks TLS). */
  readonly secure: boolean;
  /** `Max-Age` of a new cookie: the access-token lifetime. */
  readonly maxAgeSeconds: number;
}

/** `Set-Cookie` holding a fresh access token. */
export function sessionCookie(token: string, settings: CookieSettings): string {
  return serialize(token, Math.max(0, Math.floor(settings.maxAgeSeconds)), settings.secure);
}

/** `Set-Cookie` that removes the cookie. */
export function clearedSessionCookie(settings: Pick<CookieSettings, "secure">): string {
  return serialize("", 0, settings.secure);
}

function serialize(value: string, maxAge: number, secure: boolean): string {
  const attributes = [
    `${sessionCookieName}=${value}`,
    "HttpOnly",
    "SameSite=Lax",
    "Path=/",
    `Max-Age=${maxAge}`,
  ];
  if (secure) attributes.push("Secure");
  return attributes.join("; ");
}

// By procedure path, not descriptor identity: a method may come from another copy of the descriptors.
const signIns = new Set([
  procedureOf(AuthService.method.login),
  procedureOf(AuthService.method.loginWithBackupCode),
  procedureOf(AuthService.method.finishPasskeyLogin),
  procedureOf(AuthService.method.refreshToken),
]);
const logout = procedureOf(AuthService.method.logout);

/**
 * True for the sign-in procedures (their answer sets the cookie): a page of another site must not
 * call them, or it could sign a victim's browser into the attacker's account.
 */
export function isSignInProcedure(procedure: string): boolean {
  return signIns.has(procedure);
}

/** True for the methods whose answer sets or clears the cookie. */
export function touchesSessionCookie(method: DescMethod): boolean {
  // Every one of them is an AuthService method: other calls skip building the path.
  if (method.parent.typeName !== AuthService.typeName) return false;
  const procedure = procedureOf(method);
  return procedure === logout || signIns.has(procedure);
}

/**
 * The `Set-Cookie` header a successful call of `method` answers with: the new access token after
 * Login, LoginWithBackupCode, FinishPasskeyLogin and RefreshToken, a cleared cookie after Logout,
 * nothing otherwise.
 */
export function sessionCookieAfter(
  method: DescMethod,
  response: unknown,
  settings: CookieSettings,
): string | undefined {
  if (!touchesSessionCookie(method)) return undefined;
  if (procedureOf(method) === logout) return clearedSessionCookie(settings);
  const token = (response as { accessToken?: unknown }).accessToken;
  return typeof token === "string" && token !== "" ? sessionCookie(token, settings) : undefined;
}
