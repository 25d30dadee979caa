/**
 * The storage contract of oIDC and SAML providers, sign-in states consumed once, and SSO
 * discovery. Registered by `runStorageContract`.
 *
 * @module
 */
import { describe, expect } from "vitest";
import {
  aLoginState,
  anOidcProvider,
  aSamlProvider,
  type ContractContext,
  concurrency,
  expectUnique,
  ssoAt,
  tag,
  uid,
} from "./fixtures.js";

export function runSsoContract(ctx: ContractContext): void {
  ssoProviders(ctx);
  ssoLoginStates(ctx);
  directory(ctx);
}

function ssoProviders(ctx: ContractContext): void {
  const { test, seedWorkspace } = ctx;

  const at = ssoAt;

  const storage = () => ctx.storage();

  describe("sso providers", () => {
    test("oidcProviders: upsert round-trips every field; find by workspace and by id", async () => {
      const { workspace } = await seedWorkspace();
      const provider = anOidcProvider(workspace.id);
      await storage().oidcProviders.upsert(provider);
      expect(await storage().oidcProviders.find(workspace.id)).toEqual(provider);
      expect(await storage().oidcProviders.findById(provider.id)).toEqual(provider);
      const other = await seedWorkspace();
      expect(await storage().oidcProviders.find(other.workspace.id)).toBeNull();
      expect(await storage().oidcProviders.findById(uid())).toBeNull();
    });

    test("oidcProviders: a second upsert replaces every field but id and createdAt", async () => {
      const { workspace } = await seedWorkspace();
      const first = anOidcProvider(workspace.id);
      await storage().oidcProviders.upsert(first);
      const second = anOidcProvider(workspace.id, {
        id: uid(),
        name: "renamed",
        sealedClientSecret: null,
        scopes: ["openid"],
        enforceSso: false,
        usePkce: false,
        isActive: false,
        createdAt: at(500),
        updatedAt: at(501, 9),
      });
      await storage().oidcProviders.upsert(second);
      expect(await storage().oidcProviders.find(workspace.id)).toEqual({
        ...second,
        id: first.id,
        createdAt: first.createdAt,
      });
    });

    test("oidcProviders: concurrent first upserts of a workspace leave one provider", async () => {
      const { workspace } = await seedWorkspace();
      const providers = Array.from({ length: concurrency }, () => anOidcProvider(workspace.id));
      await Promise.all(providers.map((p) => storage().oidcProviders.upsert(p)));
      const stored = await storage().oidcProviders.find(workspace.id);
      expect(providers.map((p) => p.id)).toContain(stored?.id);
    });

    test("samlProviders: upsert round-trips, with and without IdP metadata", async () => {
      const { workspace } = await seedWorkspace();
      const provider = aSamlProvider(workspace.id);
      await storage().samlProviders.upsert(provider);
      expect(await storage().samlProviders.find(workspace.id)).toEqual(provider);
      const withMetadata = {
        ...provider,
        idpMetadata: {
          entityId: "https://idp.example/entity",
          ssoUrl: "https://idp.example/sso?x=1&y=2",
          certificates: ["-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"],
          fetchedAt: at(40, 11),
        },
        updatedAt: at(41, 12),
      };
      await storage().samlProviders.upsert(withMetadata);
      expect(await storage().samlProviders.findById(provider.id)).toEqual(withMetadata);
    });

    test("samlProviders: setIdpMetadata stores only while the provider keeps that metadata URL", async () => {
      const { workspace } = await seedWorkspace();
      const provider = aSamlProvider(workspace.id);
      await storage().samlProviders.upsert(provider);
      const metadata = {
        entityId: "urn:idp",
        ssoUrl: "https://idp.example/sso",
        certificates: ["a", "b"],
        fetchedAt: at(50, 13),
      };
      expect(
        await storage().samlProviders.setIdpMetadata(workspace.id, "https://elsewhere.example/m", metadata),
      ).toBe(false);
      expect((await storage().samlProviders.find(workspace.id))?.idpMetadata).toBeNull();
      expect(await storage().samlProviders.setIdpMetadata(workspace.id, provider.metadataUrl, metadata)).toBe(
        true,
      );
      expect((await storage().samlProviders.find(workspace.id))?.idpMetadata).toEqual(metadata);
    });

    test("sso providers: deleting the workspace deletes its providers", async () => {
      const { workspace } = await seedWorkspace();
      const oidc = anOidcProvider(workspace.id);
      const saml = aSamlProvider(workspace.id);
      await storage().oidcProviders.upsert(oidc);
      await storage().samlProviders.upsert(saml);
      await storage().workspaces.delete(workspace.id);
      expect(await storage().oidcProviders.findById(oidc.id)).toBeNull();
      expect(await storage().samlProviders.findById(saml.id)).toBeNull();
    });
  });
}

function ssoLoginStates(ctx: ContractContext): void {
  const { test, seedWorkspace } = ctx;

  const at = ssoAt;

  const storage = () => ctx.storage();

  describe("sso login states", () => {
    test("ssoLoginStates: find does not consume; consume returns the state once", async () => {
      const { workspace } = await seedWorkspace();
      const state = aLoginState(workspace.id);
      await storage().ssoLoginStates.insert(state);
      expect(await storage().ssoLoginStates.find(state.id, at(11))).toEqual(state);
      expect(await storage().ssoLoginStates.consume(state.id, "saml", at(11))).toBeNull();
      expect(await storage().ssoLoginStates.consume(state.id, "oidc", at(11))).toEqual(state);
      expect(await storage().ssoLoginStates.consume(state.id, "oidc", at(12))).toBeNull();
      expect(await storage().ssoLoginStates.find(state.id, at(12))).toBeNull();
    });

    test("ssoLoginStates: an expired state is neither found nor consumed", async () => {
      const { workspace } = await seedWorkspace();
      const state = aLoginState(workspace.id, { protocol: "saml" });
      await storage().ssoLoginStates.insert(state);
      expect(await storage().ssoLoginStates.find(state.id, state.expiresAt)).toBeNull();
      expect(await storage().ssoLoginStates.consume(state.id, "saml", state.expiresAt)).toBeNull();
    });

    test("ssoLoginStates: concurrent consumers, exactly one wins", async () => {
      const { workspace } = await seedWorkspace();
      const state = aLoginState(workspace.id);
      await storage().ssoLoginStates.insert(state);
      const results = await Promise.all(
        Array.from({ length: concurrency }, () => storage().ssoLoginStates.consume(state.id, "oidc", at(11))),
      );
      expect(results.filter((r) => r !== null)).toEqual([state]);
    });

    test("ssoLoginStates: deleteExpired forgets only states expired before the time", async () => {
      const { workspace } = await seedWorkspace();
      const old = aLoginState(workspace.id, { expiresAt: at(100) });
      const live = aLoginState(workspace.id, { expiresAt: at(300) });
      await storage().ssoLoginStates.insert(old);
      await storage().ssoLoginStates.insert(live);
      await storage().ssoLoginStates.deleteExpired(at(200));
      expect(await storage().ssoLoginStates.find(old.id, at(0))).toBeNull();
      expect(await storage().ssoLoginStates.find(live.id, at(0))).toEqual(live);
    });

    test("ssoLoginStates: duplicate id throws UniqueViolationError", async () => {
      const { workspace } = await seedWorkspace();
      const state = aLoginState(workspace.id);
      await storage().ssoLoginStates.insert(state);
      await expectUnique(storage().ssoLoginStates.insert({ ...state }), "sso_login_states.id");
    });
  });
}

function directory(ctx: ContractContext): void {
  const { test, seedWorkspace } = ctx;

  const at = ssoAt;

  const storage = () => ctx.storage();

  describe("sso directory and usage", () => {
    test("ssoDirectory: workspaceForVerifiedDomain sees verified domains only", async () => {
      const a = await seedWorkspace();
      const b = await seedWorkspace();
      const domain = `acme-${tag()}.example`;
      const claim = (workspaceId: string, verifiedAt: Date | null) =>
        storage().workspaceDomains.insert({
          workspaceId,
          domain,
          verificationToken: `token-${tag()}`,
          verifiedAt,
          createdAt: at(0),
          updatedAt: at(0),
        });
      await claim(a.workspace.id, null);
      expect(await storage().ssoDirectory.workspaceForVerifiedDomain(domain)).toBeNull();
      await claim(b.workspace.id, at(5));
      expect(await storage().ssoDirectory.workspaceForVerifiedDomain(domain)).toBe(b.workspace.id);
      expect(await storage().ssoDirectory.workspaceForVerifiedDomain(`other-${domain}`)).toBeNull();
    });

    test("ssoDirectory: findLinkedAccount by provider and id at the provider", async () => {
      const { user } = await seedWorkspace();
      const link = {
        userId: user.id,
        provider: `oidc-${uid()}`,
        providerId: `https://idp.example|${uid()}`,
        providerEmail: user.email,
        providerUsername: "ada",
        protocol: "oidc",
        createdAt: at(7, 7),
      };
      await storage().linkedAccounts.insert(link);
      expect(await storage().ssoDirectory.findLinkedAccount(link.provider, link.providerId)).toEqual(link);
      expect(await storage().ssoDirectory.findLinkedAccount(link.provider, "someone-else")).toBeNull();
      expect(await storage().ssoDirectory.findLinkedAccount("saml-x", link.providerId)).toBeNull();
    });
  });
}
