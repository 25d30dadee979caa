import { AuthService, UserService } from "@wap/api";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  readCookie,
  readSessionCookie,
  refreshCookie,
  sessionCookie,
  sessionCookieAfter,
} from "./session-cookie.js";

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
      "session=t1; Max-Age=900; Path=/; HttpOnly; Secure; SameSite=Lax",
    ]);
    // With a refresh token, the refresh cookie too, sent only to RefreshToken's path.
    expect(
      sessionCookieAfter(AuthService.method.login, { accessToken: "t1", refreshToken: "r1" }, settings)?.[1],
    ).toBe(
      "refresh=r1; Max-Age=900; Path=/platform.v1.AuthService/RefreshToken; HttpOnly; Secure; SameSite=Strict",
    );
    expect(
      sessionCookieAfter(AuthService.method.refreshToken, { accessToken: "t2" }, settings)?.[0],
    ).toContain("session=t2;");
    // A passkey sign-in in the browser is a sign-in like the others.
    expect(
      sessionCookieAfter(AuthService.method.finishPasskeyLogin, { accessToken: "t3" }, settings)?.[0],
    ).toContain("session=t3;");
    expect(sessionCookieAfter(AuthService.method.logout, {}, { ...settings, secure: false })).toEqual([
      "session=; Max-Age=0; Path=/; HttpOnly; SameSite=Lax",
      "refresh=; Max-Age=0; Path=/platform.v1.AuthService/RefreshToken; HttpOnly; SameSite=Strict",
    ]);
    expect(sessionCookieAfter(UserService.method.whoami, { accessToken: "t" }, settings)).toBeUndefined();
  });

  it("property: a token set in the cookie is read back, whatever cookies come around it", () => {
    const token = fc.stringMatching(/^[A-Za-z0-9._~-]{1,200}$/);
    const other = fc.tuple(fc.stringMatching(/^[a-z]{1,8}$/), fc.stringMatching(/^[A-Za-z0-9]{0,12}$/));
    fc.assert(
      fc.property(
        token,
        fc.array(other, { maxLength: 4 }),
        fc.array(other, { maxLength: 4 }),
        (value, before, after) => {
          const set = sessionCookie(value, { secure: false, maxAgeSeconds: 900 });
          const pair = set.split(";")[0]!;
          const around = (pairs: [string, string][]) =>
            pairs.filter(([name]) => name !== "session").map(([name, v]) => `${name}=${v}`);
          const header = [...around(before), pair, ...around(after)].join("; ");
          expect(readSessionCookie(header)).toBe(value);
          expect(readCookie([header], "session")).toBe(value);
        },
      ),
    );
  });

  it("keeps Max-Age within the 400 days browsers honour", () => {
    const cookie = refreshCookie("r", { secure: true, maxAgeSeconds: 900, refreshMaxAgeSeconds: 10 ** 9 });
    expect(cookie).toContain("; Max-Age=34560000;");
  });
});
