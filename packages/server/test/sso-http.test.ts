/**
 * The SSO browser endpoints through the running server, driven by plain HTTP as a browser would
 * (redirects followed by hand, cookies kept): an OIDC sign-in against oidc-provider on loopback
 * and a SAML sign-in with assertions signed by an openssl key, each ending with a `session`
 * cookie that Whoami accepts; replayed, tampered and foreign-browser callbacks are refused.
 */
import { freePort } from "@wap/storage-postgres/testing";
import { verifyDomain } from "@wap/test-kit/domains";
import { restCall, signUpWithWorkspace } from "@wap/test-kit/http";
import { browseSignIn, startOidcIdp, type TestIdp } from "@wap/test-kit/oidc-idp";
import {
  buildResponse,
  generateIdpKey,
  idpMetadataXml,
  idpSsoUrl,
  type KeyPair,
  readAuthnRequest,
  serveMetadata,
  signAssertion,
  toPostedResponse,
} from "@wap/test-kit/saml-idp";
import { startTestServer, type TestServer } from "@wap/test-kit/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const webApp = "https://app.wap.test";

let server: TestServer;

/**
 * A server whose IdPs talk plain HTTP on loopback, and whose own address is where they send
 * browsers; `allowNetworks` is the operator's allowance of non-public identity providers.
 */
async function ssoServer(allowNetworks: readonly string[]): Promise<TestServer> {
  const port = await freePort();
  return startTestServer({
    port,
    publicUrl: webApp,
    integrations: { sso: { baseUrl: `http://127.0.0.1:${port}`, allowInsecureHttp: true, allowNetworks } },
  });
}

beforeAll(async () => {
  server = await ssoServer(["127.0.0.0/8"]);
});
afterAll(async () => {
  await server?.close();
});

/** The `name=value` of a Set-Cookie line, and its attributes. */
function cookieOf(response: Response, name: string) {
  const line = response.headers.getSetCookie().find((c) => c.startsWith(`${name}=`));
  if (!line) return undefined;
  const [pair, ...attributes] = line.split(";").map((part) => part.trim());
  return { value: pair!.slice(name.length + 1), attributes, line };
}

const get = (url: string, headers: Record<string, string> = {}) =>
  fetch(url, { redirect: "manual", headers });

/**
 * A sign-in start: never a redirect, but our page naming the IdP host and the workspace, whose
 * link the user follows. Returns the response and the link.
 */
async function startPage(url: string) {
  const response = await get(url, { accept: "text/html" });
  expect(response.status).toBe(200);
  expect(response.headers.get("location")).toBeNull();
  expect(response.headers.get("content-security-policy")).toContain("default-src 'none'");
  const html = await response.text();
  const href = /<a id="continue" href="([^"]+)">/.exec(html)?.[1] ?? "";
  const location = href
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&");
  return { response, html, location };
}

/** The `ErrorInfo.reason` of a google.rpc.Status answer. */
async function reasonOf(response: Response): Promise<string> {
  const body = (await response.json()) as { details: { reason?: string }[] };
  return body.details[0]?.reason ?? "";
}

async function whoami(session: string) {
  return restCall(server.url, "GET", "/v1/whoami", undefined, { cookie: `session=${session}` });
}

/** A workspace owner with a verified domain. */
async function ownerWithDomain(name: string, on: TestServer = server) {
  const owner = await signUpWithWorkspace(on.url, name);
  const domain = `${name}-${crypto.randomUUID().slice(0, 8)}.example`;
  await verifyDomain(on.platform.services.storage, owner.workspaceId, domain);
  return { ...owner, domain };
}

async function providerIdFor(email: string): Promise<string> {
  const checked = await restCall(server.url, "GET", `/v1/sso/${encodeURIComponent(email)}`);
  expect(checked.status).toBe(200);
  return checked.body.providers[0].id as string;
}

describe("OIDC over HTTP", () => {
  let idp: TestIdp;
  let redirectUri: string;
  let owner: Awaited<ReturnType<typeof ownerWithDomain>>;
  let providerId: string;

  beforeAll(async () => {
    redirectUri = `${server.url}/v1/sso/oidc/callback`;
    idp = await startOidcIdp(redirectUri);
    owner = await ownerWithDomain("oidc");
    const updated = await restCall(
      server.url,
      "PATCH",
      `/v1/workspaces/${owner.workspaceId}/oidc`,
      {
        name: "Loopback IdP",
        issuerUrl: idp.issuer,
        clientId: "wap-confidential",
        clientSecret: "wap-confidential-secret",
        scopes: ["openid", "email", "profile"],
        allowJitProvisioning: true,
      },
      { token: owner.accessToken },
    );
    expect(updated.status).toBe(200);
    providerId = await providerIdFor(`someone@${owner.domain}`);
  });
  afterAll(async () => {
    await idp?.close();
  });

  function idpUser(local: string) {
    const sub = `sub-${crypto.randomUUID()}`;
    idp.users.set(sub, {
      sub,
      email: `${local}@${owner.domain}`,
      email_verified: true,
      name: `${local} Example`,
      preferred_username: local,
    });
    return sub;
  }

  /** Start, then sign in at the IdP: the callback URL the IdP sends the browser to, and the binding cookie. */
  async function startAndSignIn(sub: string, returnTo = "/welcome?tab=1") {
    const page = await startPage(
      `${server.url}/v1/sso/oidc/${providerId}/start?returnTo=${encodeURIComponent(returnTo)}`,
    );
    const start = page.response;
    const location = page.location;
    expect(new URL(location).origin).toBe(idp.issuer);
    // The page names where the link goes and for which workspace.
    expect(page.html).toContain(`Continue to ${new URL(idp.issuer).host}`);
    expect(page.html).toContain("<strong>oidc workspace</strong>");
    const binding = cookieOf(start, "wap_sso_binding")!;
    const callback = await browseSignIn(location, redirectUri, sub);
    return { start, location, binding, callback };
  }

  it("signs in end to end: session cookie, redirect to the web app, Whoami works", async () => {
    const sub = idpUser("ada");
    const { location, binding, callback } = await startAndSignIn(sub);
    expect(new URL(location).searchParams.get("redirect_uri")).toBe(redirectUri);
    expect(binding.attributes).toEqual(
      expect.arrayContaining(["HttpOnly", "SameSite=Lax", "Path=/v1/sso/oidc/callback", "Max-Age=600"]),
    );

    const finished = await get(callback.href, { cookie: `wap_sso_binding=${binding.value}` });
    expect(finished.status).toBe(303);
    // The web app, with the path asked for at the start, and no token or code in the URL.
    expect(finished.headers.get("location")).toBe(`${webApp}/welcome?tab=1`);
    expect(finished.headers.get("cache-control")).toBe("no-store");
    const session = cookieOf(finished, "session")!;
    expect(session.attributes).toEqual(expect.arrayContaining(["HttpOnly", "SameSite=Lax", "Path=/"]));
    expect(session.value).toMatch(/^v4\.public\./);
    expect(finished.headers.get("location")).not.toContain(session.value);
    expect(cookieOf(finished, "wap_sso_binding")?.attributes).toContain("Max-Age=0");
    // The console's refresh cookie too, so the session outlives the access token.
    expect(cookieOf(finished, "refresh")?.attributes).toEqual(
      expect.arrayContaining(["HttpOnly", "SameSite=Strict", "Path=/platform.v1.AuthService/RefreshToken"]),
    );

    const me = await whoami(session.value);
    expect(me.status).toBe(200);
    expect(me.body.user.email).toBe(`ada@${owner.domain}`);
    expect(server.logs.join("")).not.toContain(session.value);
    expect(server.logs.join("")).not.toContain(new URL(callback).searchParams.get("code")!);

    // The same callback again (a replay): refused, no session.
    const replay = await get(callback.href, { cookie: `wap_sso_binding=${binding.value}` });
    expect(replay.status).toBe(401);
    expect(cookieOf(replay, "session")).toBeUndefined();
    expect(await reasonOf(replay)).toBe("SSO_STATE_INVALID");
  });

  it("refuses a callback in another browser (no binding cookie), with a page for browsers", async () => {
    const { callback } = await startAndSignIn(idpUser("grace"));
    const planted = await get(callback.href, { accept: "text/html,application/xhtml+xml" });
    expect(planted.status).toBe(401);
    expect(planted.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(cookieOf(planted, "session")).toBeUndefined();
    const page = await planted.text();
    expect(page).toContain("Sign-in failed");
    expect(page).toContain("started in another browser");
    expect(page).not.toMatch(/at .*\.ts:\d+/);
  });

  it("refuses the IdP's error answer, and unknown providers", async () => {
    const { callback, binding } = await startAndSignIn(idpUser("mallory"));
    // Same state, but the IdP said no: the provider's error is what the browser sees.
    const url = new URL(callback);
    url.searchParams.delete("code");
    url.searchParams.set("error", "access_denied");
    const refused = await get(url.href, { cookie: `wap_sso_binding=${binding.value}` });
    expect(refused.status).toBe(401);
    expect(await reasonOf(refused)).toBe("SSO_PROVIDER_ERROR");

    const unknown = await get(`${server.url}/v1/sso/oidc/${crypto.randomUUID()}/start`);
    expect(unknown.status).toBe(404);
    expect(await reasonOf(unknown)).toBe("SSO_PROVIDER_NOT_FOUND");
    expect((await get(`${server.url}/v1/sso/oidc/not-a-uuid/start`)).status).toBe(404);
  });
});

describe("SAML over HTTP", () => {
  let idpKey: KeyPair;
  let metadata: Awaited<ReturnType<typeof serveMetadata>>;
  let owner: Awaited<ReturnType<typeof ownerWithDomain>>;
  let providerId: string;
  let acsUrl: string;
  let entityId: string;

  beforeAll(async () => {
    idpKey = generateIdpKey("http-test-idp");
    metadata = await serveMetadata(() => idpMetadataXml(idpKey.certificate));
    owner = await ownerWithDomain("saml");
    const updated = await restCall(
      server.url,
      "PATCH",
      `/v1/workspaces/${owner.workspaceId}/saml`,
      { name: "Test SAML IdP", metadataUrl: metadata.url, allowJitProvisioning: true },
      { token: owner.accessToken },
    );
    expect(updated.status).toBe(200);
    providerId = await providerIdFor(`someone@${owner.domain}`);
    acsUrl = `${server.url}/v1/sso/saml/${owner.workspaceId}/acs`;
    entityId = `${server.url}/v1/sso/saml/${owner.workspaceId}/metadata`;
  });
  afterAll(async () => {
    await metadata?.close();
  });

  async function start() {
    const { response, location, html } = await startPage(
      `${server.url}/v1/sso/saml/${providerId}/start?returnTo=/home`,
    );
    // Not a redirect from our domain to an address an admin typed: a page that says where to.
    expect(html).toContain(`Continue to ${new URL(idpSsoUrl).host}`);
    expect(html).toContain("<strong>saml workspace</strong>");
    return {
      location,
      requestId: readAuthnRequest(location).id,
      binding: cookieOf(response, "wap_sso_binding")!,
    };
  }

  function signedResponse(local: string, requestId: string) {
    const xml = buildResponse({
      inResponseTo: requestId,
      acsUrl,
      audience: entityId,
      nameId: `${local}@${owner.domain}`,
      attributes: { email: `${local}@${owner.domain}`, displayName: `${local} Example`, uid: local },
    });
    return signAssertion(xml, idpKey);
  }

  /** The IdP's page posting the form cross-site, as a browser sends it. */
  function postAcs(samlResponse: string | undefined, cookie: string) {
    const form = new URLSearchParams(samlResponse === undefined ? {} : { SAMLResponse: samlResponse });
    form.set("RelayState", "");
    return fetch(acsUrl, {
      method: "POST",
      redirect: "manual",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        origin: "https://idp.test.example",
        "sec-fetch-site": "cross-site",
        cookie,
      },
      body: form.toString(),
    });
  }

  it("serves the SP metadata; 404 for a workspace without SAML", async () => {
    const response = await get(`${server.url}/v1/sso/saml/${owner.workspaceId}/metadata`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/samlmetadata+xml; charset=utf-8");
    const xml = await response.text();
    expect(xml).toContain(`entityID="${entityId}"`);
    expect(xml).toContain(`Location="${acsUrl}"`);
    expect((await get(`${server.url}/v1/sso/saml/${crypto.randomUUID()}/metadata`)).status).toBe(404);
  });

  it("redirects with an AuthnRequest and a SameSite=None; Secure binding cookie for the ACS only", async () => {
    const { location, binding } = await start();
    expect(location.startsWith(`${idpSsoUrl}?SAMLRequest=`)).toBe(true);
    expect(readAuthnRequest(location).xml).toContain(`AssertionConsumerServiceURL="${acsUrl}"`);
    expect(binding.attributes).toEqual(
      expect.arrayContaining([
        "HttpOnly",
        "SameSite=None",
        "Secure",
        `Path=/v1/sso/saml/${owner.workspaceId}/acs`,
        "Max-Age=600",
      ]),
    );
  });

  it("accepts a signed assertion posted cross-site (no CSRF refusal), then refuses its replay", async () => {
    const { requestId, binding } = await start();
    const posted = toPostedResponse(signedResponse("ada", requestId));
    // The browser also holds someone's session cookie: the ACS is exempt from CSRF all the same.
    const cookie = `wap_sso_binding=${binding.value}; session=${owner.accessToken}`;
    const finished = await postAcs(posted, cookie);
    expect(finished.status).toBe(303);
    expect(finished.headers.get("location")).toBe(`${webApp}/home`);
    const session = cookieOf(finished, "session")!;
    const me = await whoami(session.value);
    expect(me.status).toBe(200);
    expect(me.body.user.email).toBe(`ada@${owner.domain}`);

    const replay = await postAcs(posted, cookie);
    expect(replay.status).toBe(401);
    expect(cookieOf(replay, "session")).toBeUndefined();

    // Nothing else is exempt: the same cross-site form post elsewhere is refused.
    const elsewhere = await fetch(`${server.url}/v1/workspaces`, {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        origin: "https://idp.test.example",
        cookie: `session=${owner.accessToken}`,
      },
      body: "name=evil",
    });
    expect(elsewhere.status).toBe(403);
    expect(await reasonOf(elsewhere)).toBe("CSRF_CHECK_FAILED");
  });

  it("refuses tampered and unsigned assertions, and a form without SAMLResponse", async () => {
    const tampered = await start();
    const signed = signedResponse("bob", tampered.requestId);
    const altered = signed.replace("bob Example", "eve Example");
    expect(altered).not.toBe(signed);
    const refused = await postAcs(toPostedResponse(altered), `wap_sso_binding=${tampered.binding.value}`);
    expect(refused.status).toBe(401);
    expect(await reasonOf(refused)).toBe("SAML_RESPONSE_REJECTED");

    const unsigned = await start();
    const bare = buildResponse({
      inResponseTo: unsigned.requestId,
      acsUrl,
      audience: entityId,
      nameId: `carol@${owner.domain}`,
      attributes: { email: `carol@${owner.domain}` },
    });
    const refusedBare = await postAcs(toPostedResponse(bare), `wap_sso_binding=${unsigned.binding.value}`);
    expect(refusedBare.status).toBe(401);
    expect(cookieOf(refusedBare, "session")).toBeUndefined();

    const empty = await postAcs(undefined, `wap_sso_binding=${unsigned.binding.value}`);
    expect(empty.status).toBe(400);
  });
});

describe("fetches from identity providers", () => {
  let owner: Awaited<ReturnType<typeof ownerWithDomain>>;
  let idpServer: import("node:http").Server;
  let idpUrl: string;
  const hits = new Map<string, number>();

  beforeAll(async () => {
    const { createServer } = await import("node:http");
    const { gzipSync } = await import("node:zlib");
    const bomb = gzipSync(Buffer.alloc(16 * 1024 * 1024));
    idpServer = createServer((req, res) => {
      const path = req.url ?? "/";
      hits.set(path, (hits.get(path) ?? 0) + 1);
      if (path === "/bomb/metadata") {
        res.writeHead(200, { "content-type": "application/xml", "content-encoding": "gzip" });
        res.end(bomb);
      } else if (path === "/broken/.well-known/openid-configuration") {
        // Parses, names the right issuer, but has no endpoints to sign in with.
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ issuer: `${idpUrl}/broken` }));
      } else {
        res.writeHead(404);
        res.end();
      }
    });
    await new Promise<void>((resolve) => idpServer.listen(0, "127.0.0.1", resolve));
    idpUrl = `http://127.0.0.1:${(idpServer.address() as import("node:net").AddressInfo).port}`;
    owner = await ownerWithDomain("fetches");
  });
  afterAll(async () => {
    idpServer?.closeAllConnections();
    await new Promise((resolve) => idpServer?.close(resolve));
  });

  async function samlProviderAt(metadataUrl: string) {
    const updated = await restCall(
      server.url,
      "PATCH",
      `/v1/workspaces/${owner.workspaceId}/saml`,
      { name: "Fetched IdP", metadataUrl, allowJitProvisioning: false },
      { token: owner.accessToken },
    );
    expect(updated.status).toBe(200);
    return (await providerIdFor(`someone@${owner.domain}`)) as string;
  }

  it("stops a gzip-bombed SAML metadata document at the cap, and remembers the failure", async () => {
    const providerId = await samlProviderAt(`${idpUrl}/bomb/metadata`);
    for (let i = 0; i < 3; i++) {
      const started = await get(`${server.url}/v1/sso/saml/${providerId}/start`);
      expect(started.status).toBe(503);
      const body = (await started.json()) as { message: string };
      expect(body.message).toMatch(/identity provider cannot be reached/);
    }
    // Three anonymous starts, one fetch: the failure is answered from memory.
    expect(hits.get("/bomb/metadata")).toBe(1);
    const logged = server.logs.filter((line) => line.includes("single sign-on failed"));
    expect(logged.some((line) => line.includes("larger than"))).toBe(true);
  });

  it("refuses loopback identity providers unless the operator allows the network", async () => {
    const strict = await ssoServer([]);
    try {
      const other = await ownerWithDomain("strict", strict);
      const updated = await restCall(
        strict.url,
        "PATCH",
        `/v1/workspaces/${other.workspaceId}/saml`,
        { name: "Fetched IdP", metadataUrl: `${idpUrl}/private/metadata`, allowJitProvisioning: false },
        { token: other.accessToken },
      );
      expect(updated.status).toBe(200);
      const checked = await restCall(strict.url, "GET", `/v1/sso/${encodeURIComponent(`a@${other.domain}`)}`);
      const refused = await get(`${strict.url}/v1/sso/saml/${checked.body.providers[0].id}/start`);
      expect(refused.status).toBe(503);
      expect(hits.get("/private/metadata")).toBeUndefined();
      expect(strict.logs.some((line) => line.includes("not a public address"))).toBe(true);
    } finally {
      await strict.close();
    }
  });

  it("answers a discovery document it cannot use with unavailable and what to fix, not internal", async () => {
    const updated = await restCall(
      server.url,
      "PATCH",
      `/v1/workspaces/${owner.workspaceId}/oidc`,
      { name: "Broken IdP", issuerUrl: `${idpUrl}/broken`, clientId: "wap", scopes: ["openid"] },
      { token: owner.accessToken },
    );
    expect(updated.status).toBe(200);
    const checked = await restCall(server.url, "GET", `/v1/sso/${encodeURIComponent(`a@${owner.domain}`)}`);
    const oidc = (checked.body.providers as { id: string; type: string }[]).find(
      (p) => p.type === "TYPE_OIDC",
    )!;
    const started = await get(`${server.url}/v1/sso/oidc/${oidc.id}/start`);
    expect(started.status).toBe(503);
    const body = (await started.clone().json()) as { message: string };
    expect(body.message).toMatch(/authorization_endpoint is missing; check the issuer URL/);
    expect(await reasonOf(started)).toBe("SSO_DISCOVERY_INVALID");
    // A document that cannot be used is remembered too: starting again does not fetch it again.
    const again = await get(`${server.url}/v1/sso/oidc/${oidc.id}/start`);
    expect(again.status).toBe(503);
    expect(hits.get("/broken/.well-known/openid-configuration")).toBe(1);
  });
});
