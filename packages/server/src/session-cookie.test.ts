import { AuthService, UserService } from "@wap/api";
import { describe, expect, it } from "vitest";
import { readSessionCookie, sessionCookieAfter } from "./session-cookie.js";

describe("the session cookie", () => {
  it("is read from the Cookie header among others", () => {
    expect(readSessionCookie("a=1; session=tok.en; b=2")).toBe("tok.en");
    expect(readSessionCookie(["a=1", "session=x"])).toBe("x");
    expect(readSessionCookie("sessionx=1")).toBeUndefined();
    expect(readSessionCookie(undefined)).toBeUndefined();
  });

  it("is set after sign-in and refresh, cleared after logout, untouched otherwise", () => {
    const settings = { secure: true, maxAgeSeconds: 900 };
    expect(sessionCookieAfter(AuthService.method.login, { accessToken: "t1" }, settings)).toEqual([
      "session=t1; HttpOnly; SameSite=Lax; Path=/; Max-Age=900; Secure",
    ]);
    // With a refresh token, the refresh cookie too, sent only to RefreshToken's path.
    expect(
      sessionCookieAfter(AuthService.method.login, { accessToken: "t1", refreshToken: "r1" }, settings)?.[1],
    ).toBe(
      "refresh=r1; HttpOnly; SameSite=Strict; Path=/platform.v1.AuthService/RefreshToken; Max-Age=900; Secure",
    );
    expect(
      sessionCookieAfter(AuthService.method.refreshToken, { accessToken: "t2" }, settings)?.[0],
    ).toContain("session=t2;");
    // A passkey sign-in in the browser is a sign-in like the others.
    expect(
      sessionCookieAfter(AuthService.method.finishPasskeyLogin, { accessToken: "t3" }, settings)?.[0],
    ).toContain("session=t3;");
    expect(sessionCookieAfter(AuthService.method.logout, {}, { ...settings, secure: false })).toEqual([
      "session=; HttpOnly; SameSite=Lax; Path=/; Max-Age=0",
      "refresh=; HttpOnly; SameSite=Strict; Path=/platform.v1.AuthService/RefreshToken; Max-Age=0",
    ]);
    expect(sessionCookieAfter(UserService.method.whoami, { accessToken: "t" }, settings)).toBeUndefined();
  });
});
