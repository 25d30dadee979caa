/**
 * The storage contract of the SSO and billing repositories (`@wap/core/storage` sso-billing.ts)
 * and of the audit log's filters and keyset scan. Registered by `runStorageContract`.
 *
 * @module
 */
import { randomUUID } from "node:crypto";
import { describe, expect } from "vitest";
import type { AuditEventRecord } from "../../storage/audit.js";
import type { BillingAccountRecord } from "../../storage/billing.js";
import type { CertificateAuthorityRecord } from "../../storage/certificate-authorities.js";
import type { MemberRecord } from "../../storage/members.js";
import type { ServiceAccountRecord } from "../../storage/service-accounts.js";
import type { OidcProviderRecord, SamlProviderRecord, SsoLoginStateRecord } from "../../storage/sso.js";
import type { Repositories, Storage } from "../../storage/storage.js";
import type { UserRecord } from "../../storage/users.js";
import type { WorkspaceRecord } from "../../storage/workspaces.js";

/** What the main suite hands over: its storage, its test registrar and its fixtures. */
export interface SsoBillingContractContext {
  readonly storage: () => Storage;
  readonly test: (name: string, fn: () => Promise<void>, timeout?: number) => void;
  readonly seedWorkspace: (s?: Repositories) => Promise<{ user: UserRecord; workspace: WorkspaceRecord }>;
  readonly aUser: (overrides?: Partial<UserRecord>) => UserRecord;
  readonly aMember: (workspaceId: string, userId: string, overrides?: Partial<MemberRecord>) => MemberRecord;
  readonly anAuthority: (
    workspaceId: string,
    overrides?: Partial<CertificateAuthorityRecord>,
  ) => CertificateAuthorityRecord;
  readonly aServiceAccount: (
    workspaceId: string,
    overrides?: Partial<ServiceAccountRecord>,
  ) => ServiceAccountRecord;
  readonly anAuditEvent: (
    workspaceId: string | null,
    overrides?: Partial<AuditEventRecord>,
  ) => AuditEventRecord;
  readonly expectUnique: (promise: Promise<unknown>, constraint: string) => Promise<void>;
}

const base = Date.UTC(2026, 3, 7, 9, 15, 30, 123);
const at = (seconds: number, ms = 0) => new Date(base + seconds * 1000 + ms);
const uid = () => randomUUID();
const tag = () => randomUUID().slice(0, 8);
const concurrency = 20;

function anOidcProvider(
  workspaceId: string,
  overrides: Partial<OidcProviderRecord> = {},
): OidcProviderRecord {
  return {
    id: uid(),
    workspaceId,
    name: "Acme Okta ✓",
    issuerUrl: "https://acme.okta.example/oauth2/default",
    clientId: `client-${tag()}`,
    sealedClientSecret: new Uint8Array([1, 0, 255, 128, 7]),
    scopes: ["openid", "email", "profile"],
    emailClaim: "email",
    nameClaim: "name",
    usernameClaim: "preferred_username",
    pictureClaim: "",
    enforceSso: true,
    allowJitProvisioning: false,
    usePkce: true,
    isActive: true,
    createdAt: at(0, 1),
    updatedAt: at(1, 2),
    ...overrides,
  };
}

function aSamlProvider(workspaceId: string, overrides: Partial<SamlProviderRecord> = {}): SamlProviderRecord {
  return {
    id: uid(),
    workspaceId,
    name: "Acme ADFS",
    metadataUrl: "https://adfs.acme.example/FederationMetadata/2007-06/FederationMetadata.xml",
    emailAttribute: "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress",
    nameAttribute: "",
    usernameAttribute: "uid",
    pictureAttribute: "",
    enforceSso: false,
    allowJitProvisioning: true,
    isActive: true,
    idpMetadata: null,
    createdAt: at(2, 3),
    updatedAt: at(3, 4),
    ...overrides,
  };
}

function aLoginState(workspaceId: string, overrides: Partial<SsoLoginStateRecord> = {}): SsoLoginStateRecord {
  return {
    id: `sha256-${uid()}`,
    workspaceId,
    protocol: "oidc",
    data: { nonce: "n-0S6_WzA2Mj", codeVerifier: "ünïcødé", returnTo: "/workspaces?tab=1" },
    createdAt: at(10, 5),
    expiresAt: at(610, 6),
    ...overrides,
  };
}

function aBillingAccount(
  workspaceId: string,
  overrides: Partial<BillingAccountRecord> = {},
): BillingAccountRecord {
  return {
    workspaceId,
    provider: "stripe",
    customerId: `cus_${tag()}`,
    subscriptionId: `sub_${tag()}`,
    productId: "prod_team",
    productName: "Team ✓",
    status: "active",
    cancelAtPeriodEnd: false,
    currentPeriodEnd: at(30 * 86_400, 7),
    metadata: { workspace_id: workspaceId, note: "ünïcødé" },
    stateAt: at(20, 8),
    createdAt: at(20, 9),
    updatedAt: at(21, 10),
    ...overrides,
  };
}

export function runSsoBillingContract(ctx: SsoBillingContractContext): void {
  const { test, seedWorkspace, expectUnique } = ctx;
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

  describe("billing accounts", () => {
    test("billingAccounts: upsert round-trips; find by workspace and by customer", async () => {
      const { workspace } = await seedWorkspace();
      const account = aBillingAccount(workspace.id, { currentPeriodEnd: null });
      await storage().billingAccounts.upsert(account);
      expect(await storage().billingAccounts.find(workspace.id)).toEqual(account);
      expect(await storage().billingAccounts.findByCustomer("stripe", account.customerId)).toEqual(account);
      expect(await storage().billingAccounts.findByCustomer("paddle", account.customerId)).toBeNull();
      const updated = aBillingAccount(workspace.id, {
        customerId: account.customerId,
        status: "canceled",
        cancelAtPeriodEnd: true,
        stateAt: at(90, 1),
        createdAt: at(90, 2),
        updatedAt: at(90, 3),
      });
      await storage().billingAccounts.upsert(updated);
      expect(await storage().billingAccounts.find(workspace.id)).toEqual({
        ...updated,
        createdAt: account.createdAt,
      });
    });

    test("billingAccounts: a customer belongs to one workspace", async () => {
      const a = await seedWorkspace();
      const b = await seedWorkspace();
      const account = aBillingAccount(a.workspace.id);
      await storage().billingAccounts.upsert(account);
      await expectUnique(
        storage().billingAccounts.upsert(aBillingAccount(b.workspace.id, { customerId: account.customerId })),
        "billing_accounts.customer_id",
      );
      expect(await storage().billingAccounts.find(b.workspace.id)).toBeNull();
    });
  });

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

    test("workspaceUsage: counts members, teams, service accounts, targets and authorities", async () => {
      const { workspace } = await seedWorkspace();
      const other = await seedWorkspace();
      const user = ctx.aUser();
      await storage().users.insert(user);
      await storage().members.insert(ctx.aMember(workspace.id, user.id));
      const ca = ctx.anAuthority(workspace.id);
      await storage().certificateAuthorities.insert(ca);
      await storage().certificateAuthorities.insert(ctx.anAuthority(workspace.id));
      for (let i = 0; i < 3; i++) await storage().serviceAccounts.insert(ctx.aServiceAccount(workspace.id));
      await storage().targets.insert({
        id: uid(),
        workspaceId: workspace.id,
        caId: ca.id,
        daemonId: null,
        name: `web-${tag()}`,
        description: "",
        tags: [],
        endpoints: [],
        metadata: {},
        createdAt: at(0),
        updatedAt: at(0),
      });
      await storage().teams.insert({
        id: uid(),
        workspaceId: workspace.id,
        name: `team-${tag()}`,
        description: "",
        tags: [],
        createdAt: at(0),
        updatedAt: at(0),
      });
      expect(await storage().workspaceUsage.counts(workspace.id)).toEqual({
        members: 2,
        teams: 1,
        serviceAccounts: 3,
        targets: 1,
        certificateAuthorities: 2,
      });
      expect(await storage().workspaceUsage.counts(other.workspace.id)).toEqual({
        members: 1,
        teams: 0,
        serviceAccounts: 0,
        targets: 0,
        certificateAuthorities: 0,
      });
      expect(await storage().workspaceUsage.counts(uid())).toEqual({
        members: 0,
        teams: 0,
        serviceAccounts: 0,
        targets: 0,
        certificateAuthorities: 0,
      });
    });
  });

  describe("audit log filters and scan", () => {
    test("auditEvents: list filters by lists of actors, actor types and actions", async () => {
      const { workspace } = await seedWorkspace();
      const [x, y] = [uid(), uid()];
      const events = [
        ctx.anAuditEvent(workspace.id, { actorId: x, actorType: "user", action: "a.one", timestamp: at(1) }),
        ctx.anAuditEvent(workspace.id, {
          actorId: y,
          actorType: "service_account",
          action: "a.two",
          timestamp: at(2),
        }),
        ctx.anAuditEvent(workspace.id, {
          actorId: uid(),
          actorType: "daemon",
          action: "a.three",
          timestamp: at(3),
        }),
      ];
      for (const e of events) await storage().auditEvents.append(e);
      const ids = async (filter: Parameters<Storage["auditEvents"]["list"]>[1]) => {
        const page = await storage().auditEvents.list(workspace.id, filter);
        expect(page.total).toBe(page.items.length);
        return page.items.map((e) => e.id);
      };
      const all = { limit: 100, offset: 0 };
      const [e0, e1, e2] = events.map((e) => e.id);
      expect(await ids({ ...all, actorIds: [x, y] })).toEqual([e1, e0]);
      expect(await ids({ ...all, actorTypes: ["daemon", "user"] })).toEqual([e2, e0]);
      expect(await ids({ ...all, actions: ["a.two"] })).toEqual([e1]);
      expect(await ids({ ...all, actions: [], actorIds: [], actorTypes: [] })).toEqual([e2, e1, e0]);
      expect(await ids({ ...all, actions: ["a.one", "a.two"], actorTypes: ["service_account"] })).toEqual([
        e1,
      ]);
    });

    test("auditEvents: search is a substring, ASCII-case-insensitive, wildcards literal", async () => {
      const { workspace } = await seedWorkspace();
      const ua = ctx.anAuditEvent(workspace.id, { userAgent: "Mozilla/5.0 (X11) ÜBER", timestamp: at(1) });
      const ip = ctx.anAuditEvent(workspace.id, { ipAddress: "2001:db8::42", timestamp: at(2) });
      const action = ctx.anAuditEvent(workspace.id, { action: "Team.Member_Add", timestamp: at(3) });
      const percent = ctx.anAuditEvent(workspace.id, { resource: "target:100%_sure", timestamp: at(4) });
      for (const e of [ua, ip, action, percent]) await storage().auditEvents.append(e);
      const search = async (text: string) =>
        (await storage().auditEvents.list(workspace.id, { limit: 100, offset: 0, search: text })).items.map(
          (e) => e.id,
        );
      expect(await search("mozilla/5")).toEqual([ua.id]);
      expect(await search("ÜBER")).toEqual([ua.id]);
      // Only ASCII letters fold: the same answer on every engine.
      expect(await search("über")).toEqual([]);
      expect(await search("DB8::4")).toEqual([ip.id]);
      expect(await search("member_add")).toEqual([action.id]);
      expect(await search("100%_")).toEqual([percent.id]);
      expect(await search("0%s")).toEqual([]);
      expect(await search("member!add")).toEqual([]);
    });

    test("auditLog: scan walks a window oldest first in pages; count agrees", async () => {
      const { workspace } = await seedWorkspace();
      const other = await seedWorkspace();
      const events: AuditEventRecord[] = [];
      // Several events share a millisecond: their append order breaks the tie.
      for (let i = 0; i < 23; i++)
        events.push(ctx.anAuditEvent(workspace.id, { timestamp: at(100 + Math.floor(i / 4)) }));
      for (const e of events) await storage().auditEvents.append(e);
      await storage().auditEvents.append(ctx.anAuditEvent(other.workspace.id, { timestamp: at(101) }));
      await storage().auditEvents.append(ctx.anAuditEvent(workspace.id, { timestamp: at(99) }));
      await storage().auditEvents.append(ctx.anAuditEvent(workspace.id, { timestamp: at(200) }));
      const window = { since: at(100), until: at(200) };
      expect(await storage().auditEvents.count(workspace.id, window)).toBe(23);
      const seen: string[] = [];
      let after: string | undefined;
      let pages = 0;
      for (;;) {
        const page = await storage().auditEvents.scan(workspace.id, {
          ...window,
          limit: 5,
          ...(after === undefined ? {} : { after }),
        });
        pages++;
        seen.push(...page.items.map((e) => e.id));
        if (page.next === null) break;
        after = page.next;
      }
      expect(seen).toEqual(events.map((e) => e.id));
      expect(pages).toBe(5);
      const first = await storage().auditEvents.scan(workspace.id, { ...window, limit: 1 });
      expect(first.items).toEqual([events[0]]);
    });

    test("auditLog: an exact last page ends with an empty one; an empty window is one page", async () => {
      const { workspace } = await seedWorkspace();
      for (let i = 0; i < 4; i++)
        await storage().auditEvents.append(ctx.anAuditEvent(workspace.id, { timestamp: at(i) }));
      const page = await storage().auditEvents.scan(workspace.id, { limit: 4 });
      expect(page.items).toHaveLength(4);
      expect(page.next).not.toBeNull();
      const rest = await storage().auditEvents.scan(workspace.id, { limit: 4, after: page.next! });
      expect(rest).toEqual({ items: [], next: null });
      expect(await storage().auditEvents.scan(workspace.id, { limit: 4, since: at(50) })).toEqual({
        items: [],
        next: null,
      });
      expect(await storage().auditEvents.count(workspace.id, { since: at(50) })).toBe(0);
      expect(await storage().auditEvents.count(workspace.id, {})).toBe(4);
    });
  });
}
