/**
 * A real OpenID Provider (oidc-provider) on loopback, and a browser made of plain HTTP requests
 * that signs in through its development login and consent pages.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import Provider from "oidc-provider";

export interface IdpUser {
  readonly sub: string;
  readonly email?: string;
  readonly email_verified?: boolean;
  readonly name?: string;
  readonly preferred_username?: string;
  readonly picture?: string;
}

export interface TestIdp {
  readonly issuer: string;
  readonly users: Map<string, IdpUser>;
  close(): Promise<void>;
}

/** Starts the provider with a confidential client and a public (PKCE-only) client. */
export async function startOidcIdp(redirectUri: string): Promise<TestIdp> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const users = new Map<string, IdpUser>();
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: "wap-confidential",
        client_secret: "wap-confidential-secret",
        redirect_uris: [redirectUri],
        grant_types: ["authorization_code"],
        response_types: ["code"],
      },
      {
        client_id: "wap-public",
        token_endpoint_auth_method: "none",
        redirect_uris: [redirectUri],
        grant_types: ["authorization_code"],
        response_types: ["code"],
      },
    ],
    claims: {
      openid: ["sub"],
      email: ["email", "email_verified"],
      profile: ["name", "preferred_username", "picture"],
    },
    cookies: { keys: ["a-test-cookie-signing-key"] },
    features: { devInteractions: { enabled: true } },
    ttl: {
      Interaction: 600,
      Session: 600,
      Grant: 600,
      AccessToken: 600,
      IdToken: 600,
      AuthorizationCode: 60,
    },
    async findAccount(_ctx, id) {
      const user = users.get(id);
      if (!user) return undefined;
      return { accountId: id, claims: async () => ({ ...user }) };
    },
  });
  server.on("request", provider.callback());
  return {
    issuer,
    users,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A cookie jar keyed by name (the flow is sequential, so the latest cookie of a name wins). */
class Jar {
  private readonly cookies = new Map<string, string>();
  store(response: Response) {
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(";");
      const eq = pair!.indexOf("=");
      this.cookies.set(pair!.slice(0, eq).trim(), pair!.slice(eq + 1));
    }
  }
  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  }
}

/**
 * Follows the provider's redirects from `authorizationUrl`, signing `accountId` in and
 * consenting (or aborting, with `abort`), until it redirects to `redirectUri`. Returns that URL.
 */
export async function browseSignIn(
  authorizationUrl: string,
  redirectUri: string,
  accountId: string,
  options: { readonly abort?: boolean } = {},
): Promise<URL> {
  const jar = new Jar();
  let url = new URL(authorizationUrl);
  for (let step = 0; step < 20; step++) {
    if (url.href.startsWith(redirectUri)) return url;
    const response = await fetch(url, { redirect: "manual", headers: { cookie: jar.header() } });
    jar.store(response);
    const location = response.headers.get("location");
    if (location) {
      url = new URL(location, url);
      continue;
    }
    const page = await response.text();
    if (response.status !== 200 || !url.pathname.startsWith("/interaction/")) {
      throw new Error(`unexpected ${response.status} at ${url.href}: ${page.slice(0, 300)}`);
    }
    if (options.abort) {
      url = new URL(`${url.pathname}/abort`, url);
      continue;
    }
    const prompt = /name="prompt" value="(\w+)"/.exec(page)?.[1];
    const form: Record<string, string> =
      prompt === "login" ? { prompt, login: accountId, password: "any" } : { prompt: prompt ?? "consent" };
    const submitted = await fetch(url, {
      method: "POST",
      redirect: "manual",
      headers: { cookie: jar.header(), "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(form).toString(),
    });
    jar.store(submitted);
    const next = submitted.headers.get("location");
    if (!next)
      throw new Error(
        `the ${prompt} form answered ${submitted.status}: ${(await submitted.text()).slice(0, 300)}`,
      );
    url = new URL(next, url);
  }
  throw new Error("the sign-in did not come back to the redirect URI");
}
