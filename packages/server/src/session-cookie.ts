/**
 * The `session` cookie: the access token for browsers. Set by Login and RefreshToken, cleared by
 * Logout, on Connect and REST alike. HttpOnly so scripts cannot read it, SameSite=Lax so other
 * sites cannot send it with their POSTs, Secure whenever browsers come by https (TLS here, an https
 * public URL, or a trusted proxy saying so).
 *
 * The `refresh` cookie keeps a browser session past the access token's 15 minutes: it holds the
 * refresh token, is sent only to the Connect path of RefreshToken (Path), never by another site
 * (SameSite=Strict), and is read by RefreshToken when its request carries no token. Each refresh
 * rotates it, and reusing a spent one ends the session, as for refresh tokens sent in the body.
 *
 * @module
 */
import type { DescMethod } from "@bufbuild/protobuf";
import { AuthService } from "@wap/api";
import { procedureOf } from "@wap/core/internal";
import { generateCookie } from "hono/cookie";
import { parse } from "hono/utils/cookie";

export const sessionCookieName = "session";
export const refreshCookieName = "refresh";
/** The only path the browser sends the refresh cookie to. */
export const refreshCookiePath = procedureOf(AuthService.method.refreshToken);

/** The value of the `session` cookie in a `Cookie` header, if any. */
export function readSessionCookie(cookieHeader: string | string[] | undefined): string | undefined {
  return readCookie(cookieHeader, sessionCookieName);
}

/** The value of the cookie `name` in a `Cookie` header (or several), if any: the first one. */
export function readCookie(cookieHeader: string | string[] | undefined, name: string): string | undefined {
  if (cookieHeader === undefined) return undefined;
  const header = Array.isArray(cookieHeader) ? cookieHeader.join("; ") : cookieHeader;
  return header === "" ? undefined : parse(header, name)[name];
}

export interface CookieSettings {
  /** Add `Secure` (the server speaks TLS). */
  readonly secure: boolean;
  /** `Max-Age` of a new cookie: the access-token lifetime. */
  readonly maxAgeSeconds: number;
  /** `Max-Age` of a new refresh cookie: the session's lifetime. */
  readonly refreshMaxAgeSeconds?: number;
}

/** `Set-Cookie` holding a fresh access token. */
export function sessionCookie(token: string, settings: CookieSettings): string {
  return serialize(token, Math.max(0, Math.floor(settings.maxAgeSeconds)), settings.secure);
}

/** `Set-Cookie` that removes the cookie. */
export function clearedSessionCookie(settings: Pick<CookieSettings, "secure">): string {
  return serialize("", 0, settings.secure);
}

/** `Set-Cookie` holding a fresh refresh token. */
export function refreshCookie(token: string, settings: CookieSettings): string {
  const maxAge = Math.max(0, Math.floor(settings.refreshMaxAgeSeconds ?? settings.maxAgeSeconds));
  return serialize(token, maxAge, settings.secure, refreshCookieName);
}

/** `Set-Cookie` that removes the refresh cookie. */
export function clearedRefreshCookie(settings: Pick<CookieSettings, "secure">): string {
  return serialize("", 0, settings.secure, refreshCookieName);
}

/** Browsers keep a cookie 400 days at most (RFC 6265bis); Hono refuses a longer Max-Age. */
const maxCookieAgeSeconds = 400 * 24 * 60 * 60;

function serialize(value: string, maxAge: number, secure: boolean, name = sessionCookieName): string {
  const refresh = name === refreshCookieName;
  return generateCookie(name, value, {
    httpOnly: true,
    sameSite: refresh ? "Strict" : "Lax",
    path: refresh ? refreshCookiePath : "/",
    maxAge: Math.min(maxAge, maxCookieAgeSeconds),
    secure,
  });
}

// By procedure path, not descriptor identity: a method may come from another copy of the descriptors.
const signIns = new Set([
  procedureOf(AuthService.method.login),
  procedureOf(AuthService.method.loginWithBackupCode),
  procedureOf(AuthService.method.finishPasskeyLogin),
  procedureOf(AuthService.method.refreshToken),
]);
const logout = procedureOf(AuthService.method.logout);

/** True for the methods whose answer sets or clears the cookie. */
export function touchesSessionCookie(method: DescMethod): boolean {
  // Every one of them is an AuthService method: other calls skip building the path.
  if (method.parent.typeName !== AuthService.typeName) return false;
  const procedure = procedureOf(method);
  return procedure === logout || signIns.has(procedure);
}

/**
 * The `Set-Cookie` headers a successful call of `method` answers with: the new access and refresh
 * tokens after Login, LoginWithBackupCode, FinishPasskeyLogin and RefreshToken, both cookies
 * cleared after Logout, nothing otherwise.
 */
export function sessionCookieAfter(
  method: DescMethod,
  response: unknown,
  settings: CookieSettings,
): string[] | undefined {
  if (!touchesSessionCookie(method)) return undefined;
  if (procedureOf(method) === logout) return [clearedSessionCookie(settings), clearedRefreshCookie(settings)];
  const { accessToken, refreshToken } = response as { accessToken?: unknown; refreshToken?: unknown };
  if (typeof accessToken !== "string" || accessToken === "") return undefined;
  const cookies = [sessionCookie(accessToken, settings)];
  if (typeof refreshToken === "string" && refreshToken !== "")
    cookies.push(refreshCookie(refreshToken, settings));
  return cookies;
}
