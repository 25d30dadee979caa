import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { AuthService, UserService } from "@wap/api";
import { describe, expect, it } from "vitest";
import { createAuthInterceptor, createMemoryTokenStore } from "./session.js";

/** A Connect router that accepts only the current access token and rotates on refresh. */
function fakeServer() {
  const state = { current: "access-1", refreshCalls: 0, seenAuth: [] as string[] };
  const routes = createRouterTransport(({ service }) => {
    service(UserService, {
      whoami(_req, ctx) {
        const auth = ctx.requestHeader.get("Authorization") ?? "";
        state.seenAuth.push(auth);
        if (auth !== `Bearer ${state.current}`) throw new ConnectError("expired", Code.Unauthenticated);
        return { user: { id: "u1", name: "Ada" } };
      },
    });
    service(AuthService, {
      refreshToken(req) {
        state.refreshCalls++;
        if (req.refreshToken !== `refresh-${state.refreshCalls}`)
          throw new ConnectError("reused", Code.Unauthenticated);
        state.current = `access-${state.refreshCalls + 1}`;
        return { accessToken: state.current, refreshToken: `refresh-${state.refreshCalls + 1}` };
      },
    });
  });
  return { state, routes };
}

describe("createAuthInterceptor", () => {
  it("sends the bearer token, refreshes once on unauthenticated and retries", async () => {
    const { state, routes } = fakeServer();
    state.current = "access-2"; // the held token has expired
    const store = createMemoryTokenStore({ accessToken: "access-1", refreshToken: "refresh-1" });
    const refresher = createClient(AuthService, routes);
    const interceptor = createAuthInterceptor(store, async (refreshToken) => {
      const res = await refresher.refreshToken({ refreshToken });
      return { accessToken: res.accessToken, refreshToken: res.refreshToken };
    });
    const transport = createRouterTransport(
      ({ service }) => {
        service(UserService, {
          whoami: (req, ctx) => createClient(UserService, routes).whoami(req, { headers: ctx.requestHeader }),
        });
      },
      { transport: { interceptors: [interceptor] } },
    );
    const res = await createClient(UserService, transport).whoami({});
    expect(res.user?.name).toBe("Ada");
    expect(state.refreshCalls).toBe(1);
    expect(state.seenAuth).toEqual(["Bearer access-1", "Bearer access-2"]);
    expect(store.get()).toEqual({ accessToken: "access-2", refreshToken: "refresh-2" });
  });

  it("forgets the tokens when the refresh itself is refused", async () => {
    const { state, routes } = fakeServer();
    state.current = "access-9";
    const store = createMemoryTokenStore({ accessToken: "access-1", refreshToken: "stolen" });
    const interceptor = createAuthInterceptor(store, async (refreshToken) => {
      const res = await createClient(AuthService, routes).refreshToken({ refreshToken });
      return { accessToken: res.accessToken };
    });
    const transport = createRouterTransport(
      ({ service }) => {
        service(UserService, {
          whoami: (req, ctx) => createClient(UserService, routes).whoami(req, { headers: ctx.requestHeader }),
        });
      },
      { transport: { interceptors: [interceptor] } },
    );
    await expect(createClient(UserService, transport).whoami({})).rejects.toMatchObject({
      code: Code.Unauthenticated,
    });
    expect(store.get()).toBeUndefined();
  });
});
