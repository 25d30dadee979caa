/**
 * The state of a sign-in while the browser is at the identity provider: stored server-side,
 * consumed exactly once, and bound to the browser that started it.
 *
 * The binding is a random value the server puts in a cookie when the sign-in starts; only its
 * hash is stored. A callback without the same cookie (a login link planted in someone else's
 * browser, "login CSRF") is refused even with a valid state.
 *
 * @module
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { encodeBase64Url } from "../lib/base64.js";
import type { Services } from "../operations/services.js";
import type { SsoLoginStateRecord, SsoProtocol } from "../storage/sso.js";
import { sitePath } from "../validation/rules.js";
import { ssoOptions } from "./options.js";

/** The cookie the server sets when a sign-in starts and reads back on the callback. */
export interface BrowserBinding {
  readonly cookieName: string;
  readonly value: string;
  readonly maxAgeSeconds: number;
  /**
   * OIDC callbacks are top-level GET navigations (`Lax` cookies are sent); SAML posts the
   * response cross-site, which only sends `SameSite=None; Secure` cookies.
   */
  readonly sameSite: "lax" | "none";
  /** The cookie's path: only the SSO endpoints need it. */
  readonly path: string;
}

export const bindingCookieName = "wap_sso_binding";

export function sha256Hex(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/** A random URL-safe secret of 32 bytes from the injected randomness. */
export function randomToken(services: Services): string {
  return encodeBase64Url(services.random.bytes(32));
}

/** Where the browser goes after signing in: a path of the web app, never another site. */
export function safeReturnTo(value: string | undefined): string {
  return value !== undefined && sitePath.safeParse(value).success ? value : "/";
}

/** Creates the binding cookie and stores the state under the hash of `key`. */
export async function saveLoginState(
  services: Services,
  state: {
    readonly key: string;
    readonly workspaceId: string;
    readonly protocol: SsoProtocol;
    readonly data: Readonly<Record<string, string>>;
  },
): Promise<BrowserBinding> {
  const { loginTtlSeconds } = ssoOptions(services);
  const now = services.clock.now();
  const binding = randomToken(services);
  // Anyone can start sign-ins: expired ones are swept as new ones come.
  await services.storage.ssoLoginStates.deleteExpired(now);
  await services.storage.ssoLoginStates.insert({
    id: sha256Hex(state.key),
    workspaceId: state.workspaceId,
    protocol: state.protocol,
    data: { ...state.data, binding: sha256Hex(binding) },
    createdAt: now,
    expiresAt: new Date(now.getTime() + loginTtlSeconds * 1000),
  });
  return {
    cookieName: bindingCookieName,
    value: binding,
    maxAgeSeconds: loginTtlSeconds,
    sameSite: state.protocol === "saml" ? "none" : "lax",
    path: "/v1/sso",
  };
}

function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a, "utf8");
  const y = Buffer.from(b, "utf8");
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * Consumes the state stored under `key` if it is unexpired, of `protocol`, and was started by
 * the browser presenting `binding`. Null otherwise; a state is never usable twice, even when
 * the binding was wrong (whoever holds a wrong cookie is not the one who started it).
 */
export async function takeLoginState(
  services: Services,
  key: string,
  protocol: SsoProtocol,
  binding: string | undefined,
): Promise<SsoLoginStateRecord | null> {
  const state = await services.storage.ssoLoginStates.consume(sha256Hex(key), protocol, services.clock.now());
  if (!state || binding === undefined || binding === "") return null;
  return sameHash(state.data.binding ?? "", sha256Hex(binding)) ? state : null;
}
