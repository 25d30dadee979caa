/**
 * SAML sign-in through @node-saml/node-saml against a test IdP whose key openssl made: SP
 * metadata, the AuthnRequest, and an ACS that accepts only correctly signed, unexpired,
 * audience-matched assertions answering our own request, once. Tampered, unsigned, foreign-key,
 * expired, wrong-audience, wrong-issuer, IdP-initiated and replayed responses are refused.
 */

import { SSOService, UserService, UtilService } from "@wap/api";
import {
  type AssertionOptions,
  buildResponse,
  generateIdpKey,
  idpEntityId,
  idpMetadataXml,
  idpSsoUrl,
  type KeyPair,
  readAuthnRequest,
  serveMetadata,
  signAssertion,
  signResponse,
  toPostedResponse,
} from "@wap/test-kit/saml-idp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ssoUrls } from "../src/sso/options.js";
import { beginSamlSignIn, finishSamlSignIn, samlServiceProviderMetadata } from "../src/sso/saml.js";
import { useIntegrations, verifyDomain } from "./support/enterprise.js";
import { createTestPlatform, expectCode, type TestPlatform } from "./support.js";

const baseUrl = "https://wap.example";
const browser = { ipAddress: "198.51.100.4", userAgent: "TestBrowser/2.0", requestId: "req-saml" };

let t: TestPlatform;
let idpKey: KeyPair;
let otherKey: KeyPair;
let metadata: Awaited<ReturnType<typeof serveMetadata>>;
let owner: Awaited<ReturnType<TestPlatform["owner"]>>;
let domain: string;
let urls: ReturnType<typeof ssoUrls>;

beforeAll(async () => {
  idpKey = generateIdpKey("test-idp");
  otherKey = generateIdpKey("someone-else");
  metadata = await serveMetadata(() => idpMetadataXml(idpKey.certificate));
  t = await createTestPlatform();
  // node-saml checks assertion times against the real clock: keep ours with it.
  t.clock.set(new Date());
  useIntegrations(t.platform, { sso: { baseUrl, allowInsecureHttp: true, allowNetworks: ["127.0.0.0/8"] } });
  owner = await t.owner();
  domain = `saml-${crypto.randomUUID().slice(0, 8)}.example`;
  await verifyDomain(t.storage, owner.workspaceId, domain);
  await t.call(owner.caller, SSOService.method.updateSAMLProvider, {
    workspaceId: owner.workspaceId,
    name: "Test SAML IdP",
    metadataUrl: metadata.url,
    allowJitProvisioning: true,
  });
  urls = ssoUrls(t.platform.services, owner.workspaceId);
});
afterAll(async () => {
  await t.platform.close();
  await metadata.close();
});

/** Starts a sign-in; returns the AuthnRequest id and the binding cookie value. */
async function start() {
  const begun = await beginSamlSignIn(
    t.platform.services,
    { workspaceId: owner.workspaceId },
    { returnTo: "/home" },
  );
  const request = readAuthnRequest(begun.authorizationUrl);
  return { ...begun, requestId: request.id, requestXml: request.xml };
}

function assertionFor(
  local: string,
  requestId: string | undefined,
  overrides: Partial<AssertionOptions> = {},
) {
  return buildResponse({
    ...(requestId === undefined ? {} : { inResponseTo: requestId }),
    acsUrl: urls.samlAcsUrl,
    audience: urls.samlEntityId,
    nameId: `${local}@${domain}`,
    attributes: { email: `${local}@${domain}`, displayName: `${local} Example`, uid: local },
    ...overrides,
  });
}

const acs = (samlResponse: string, binding: string | undefined) =>
  finishSamlSignIn(
    t.platform.services,
    { workspaceId: owner.workspaceId, samlResponse, ...(binding === undefined ? {} : { binding }) },
    browser,
  );

async function expectRejected(promise: Promise<unknown>, reason = "SAML_RESPONSE_REJECTED", text?: RegExp) {
  const error = await expectCode(promise, "unauthenticated");
  expect(error.reason).toBe(reason);
  if (text) expect(error.message).toMatch(text);
  return error;
}

describe("SAML service provider", () => {
  it("publishes SP metadata and sends an AuthnRequest for our ACS to the IdP's redirect endpoint", async () => {
    const xml = await samlServiceProviderMetadata(t.platform.services, owner.workspaceId);
    expect(xml).toContain(`entityID="${urls.samlEntityId}"`);
    expect(xml).toContain(`Location="${urls.samlAcsUrl}"`);
    expect(xml).toContain('WantAssertionsSigned="true"');
    await expectCode(samlServiceProviderMetadata(t.platform.services, crypto.randomUUID()), "not_found");

    const begun = await start();
    expect(begun.authorizationUrl.startsWith(`${idpSsoUrl}?`)).toBe(true);
    expect(begun.requestXml).toContain(`AssertionConsumerServiceURL="${urls.samlAcsUrl}"`);
    expect(begun.requestXml).toContain(urls.samlEntityId);
    expect(begun.binding).toMatchObject({ sameSite: "none", path: "/v1/sso" });
    // The IdP metadata was fetched once and is reused while fresh.
    const before = metadata.fetches();
    await start();
    expect(metadata.fetches()).toBe(before);
    expect((await t.storage.samlProviders.find(owner.workspaceId))?.idpMetadata?.entityId).toBe(idpEntityId);
  });
});

describe("SAML ACS", () => {
  it("accepts a signed assertion answering our request: JIT user, linked identity, audit", async () => {
    const begun = await start();
    const response = signAssertion(assertionFor("ada", begun.requestId), idpKey);
    const result = await acs(toPostedResponse(response), begun.binding.value);
    expect(result).toMatchObject({
      workspaceId: owner.workspaceId,
      created: true,
      linked: true,
      returnTo: "/home",
    });
    const user = (await t.storage.users.findById(result.userId))!;
    expect(user).toMatchObject({
      email: `ada@${domain}`,
      emailVerified: true,
      name: "ada Example",
      username: "ada",
    });
    const { caller } = await t.platform.authenticate({ bearer: result.accessToken });
    const { accounts } = await t.call(caller, UserService.method.listLinkedAccounts, {});
    expect(
      accounts.map((a) => ({ provider: a.provider, providerId: a.providerId, protocol: a.protocol })),
    ).toEqual([
      { provider: `saml-${owner.workspaceId}`, providerId: `${idpEntityId}|ada@${domain}`, protocol: "saml" },
    ]);
    const { logs } = await t.call(owner.caller, UtilService.method.listAuditLogs, {
      workspaceId: owner.workspaceId,
      actions: ["sso.login.saml"],
    });
    expect(logs.map((l) => l.actorId)).toEqual([user.id]);

    // The same response again: its request was used, and so was its assertion.
    await expectRejected(acs(toPostedResponse(response), begun.binding.value));
  });

  it("accepts a signed response around a signed assertion", async () => {
    const begun = await start();
    const response = signResponse(signAssertion(assertionFor("grace", begun.requestId), idpKey), idpKey);
    const result = await acs(toPostedResponse(response), begun.binding.value);
    expect(result.created).toBe(true);
  });

  it("refuses a tampered assertion", async () => {
    const begun = await start();
    const signed = signAssertion(assertionFor("eve", begun.requestId), idpKey);
    const tampered = signed.replace(
      `<saml:AttributeValue>eve@${domain}</saml:AttributeValue>`,
      `<saml:AttributeValue>ceo@${domain}</saml:AttributeValue>`,
    );
    expect(tampered).not.toBe(signed);
    await expectRejected(
      acs(toPostedResponse(tampered), begun.binding.value),
      "SAML_RESPONSE_REJECTED",
      /signature/i,
    );
    const renamed = signed.replace(`>eve@${domain}</saml:NameID>`, `>ceo@${domain}</saml:NameID>`);
    await expectRejected(acs(toPostedResponse(renamed), (await start()).binding.value));
    expect(await t.storage.users.findByEmail(`ceo@${domain}`)).toBeNull();
  });

  it("refuses an unsigned assertion, one signed by another key, and a signed response with an unsigned assertion", async () => {
    const a = await start();
    await expectRejected(acs(toPostedResponse(assertionFor("u1", a.requestId)), a.binding.value));
    const b = await start();
    await expectRejected(
      acs(toPostedResponse(signAssertion(assertionFor("u2", b.requestId), otherKey)), b.binding.value),
    );
    const c = await start();
    await expectRejected(
      acs(toPostedResponse(signResponse(assertionFor("u3", c.requestId), idpKey)), c.binding.value),
    );
    for (const local of ["u1", "u2", "u3"])
      expect(await t.storage.users.findByEmail(`${local}@${domain}`)).toBeNull();
  });

  it("refuses an expired assertion, a wrong audience, and another issuer", async () => {
    const a = await start();
    const expired = assertionFor("late", a.requestId, { issuedAt: new Date(Date.now() - 60 * 60_000) });
    // Its subject confirmation lapsed with it (node-saml checks that first).
    await expectRejected(
      acs(toPostedResponse(signAssertion(expired, idpKey)), a.binding.value),
      "SAML_RESPONSE_REJECTED",
      /expired|no valid subject confirmation/i,
    );
    const b = await start();
    const elsewhere = assertionFor("aud", b.requestId, { audience: "https://another-sp.example/metadata" });
    await expectRejected(
      acs(toPostedResponse(signAssertion(elsewhere, idpKey)), b.binding.value),
      "SAML_RESPONSE_REJECTED",
      /audience/i,
    );
    const c = await start();
    const impostor = assertionFor("iss", c.requestId, { issuer: "https://impostor.example" });
    await expectRejected(
      acs(toPostedResponse(signAssertion(impostor, idpKey)), c.binding.value),
      "SAML_RESPONSE_REJECTED",
      /issued by/,
    );
  });

  it("refuses IdP-initiated responses, responses to unknown requests, and another browser", async () => {
    const unsolicited = signAssertion(assertionFor("idpinit", undefined), idpKey);
    await expectRejected(acs(toPostedResponse(unsolicited), "whatever"));
    const forged = signAssertion(assertionFor("forged", "_not-a-request-of-ours"), idpKey);
    await expectRejected(acs(toPostedResponse(forged), "whatever"));
    const begun = await start();
    const response = toPostedResponse(signAssertion(assertionFor("browser", begun.requestId), idpKey));
    await expectRejected(acs(response, "another-browser-cookie"), "SSO_STATE_INVALID");
    // The state is spent even though the cookie was wrong.
    await expectRejected(acs(response, begun.binding.value));
  });

  it("remembers assertion ids: a signed assertion moved to a new request is a replay", async () => {
    // An IdP that does not repeat InResponseTo inside the signed assertion: only the id protects.
    const first = await start();
    const assertionId = `_a${crypto.randomUUID().replaceAll("-", "")}`;
    const build = (requestId: string) =>
      signAssertion(assertionFor("moved", requestId, { assertionId, confirmInResponseTo: false }), idpKey);
    const signed = build(first.requestId);
    await acs(toPostedResponse(signed), first.binding.value);
    const second = await start();
    // Only the (unsigned) Response's InResponseTo changes; the signed assertion stays intact.
    const moved = signed.replace(`InResponseTo="${first.requestId}"`, `InResponseTo="${second.requestId}"`);
    expect(moved).not.toBe(signed);
    await expectRejected(
      acs(toPostedResponse(moved), second.binding.value),
      "SAML_RESPONSE_REJECTED",
      /replay/,
    );
  });

  it("refuses addresses outside the verified domains and unknown users when JIT is off", async () => {
    const a = await start();
    const outsider = assertionFor("x", a.requestId, {
      nameId: "x@elsewhere.example",
      attributes: { email: "x@elsewhere.example" },
    });
    const denied = await expectCode(
      acs(toPostedResponse(signAssertion(outsider, idpKey)), a.binding.value),
      "permission_denied",
    );
    expect(denied.reason).toBe("SSO_DOMAIN_NOT_VERIFIED");
    await t.call(owner.caller, SSOService.method.updateSAMLProvider, {
      workspaceId: owner.workspaceId,
      allowJitProvisioning: false,
    });
    try {
      const b = await start();
      const stranger = assertionFor("nojit", b.requestId);
      const error = await expectCode(
        acs(toPostedResponse(signAssertion(stranger, idpKey)), b.binding.value),
        "permission_denied",
      );
      expect(error.reason).toBe("SSO_JIT_DISABLED");
    } finally {
      await t.call(owner.caller, SSOService.method.updateSAMLProvider, {
        workspaceId: owner.workspaceId,
        allowJitProvisioning: true,
      });
    }
  });
});
