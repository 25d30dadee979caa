/** Domains, single sign-on providers, billing and the licence. */
import { useQuery } from "@connectrpc/connect-query";
import { BillingService, LicenseService, SSOService, WorkspaceDomainService } from "@wap/api";
import { Can, useAccess } from "../access";
import { api, Code, isCode, when } from "../api";
import {
  ActionForm,
  Check,
  ConfirmButton,
  Copyable,
  Empty,
  ErrorNote,
  Field,
  Notice,
  Page,
  QueryState,
  Section,
  text,
  useAction,
} from "../ui";
import { useWs } from "./workspace";

export function DomainsPage() {
  const ws = useWs();
  const domains = useQuery(WorkspaceDomainService.method.listWorkspaceDomains, { workspaceId: ws });
  const access = useAccess(ws);
  const manage = access.can("domains.manage");
  const create = useAction((form: FormData) =>
    api.domains.createWorkspaceDomain({ workspaceId: ws, domain: text(form, "domain").toLowerCase() }),
  );
  const verify = useAction((domain: string) =>
    api.domains.verifyWorkspaceDomain({ workspaceId: ws, domain }),
  );
  const regenerate = useAction((domain: string) =>
    api.domains.regenerateWorkspaceDomainToken({ workspaceId: ws, domain }),
  );
  const remove = useAction((domain: string) =>
    api.domains.deleteWorkspaceDomain({ workspaceId: ws, domain }),
  );
  return (
    <Page title="Domains">
      <p>
        A verified domain lets people with addresses there find this workspace's single sign-on. Prove you own
        a domain with a DNS TXT record, then verify it.
      </p>
      <Can access={access} need="domains.manage" doing="add, verify or remove domains">
        {null}
      </Can>
      <ErrorNote error={verify.error ?? regenerate.error ?? remove.error} />
      {verify.result && <Notice>{verify.result.domain?.domain} is verified.</Notice>}
      <QueryState
        query={domains}
        empty={(d) => (d.domains.length === 0 ? <Empty>No domain yet.</Empty> : undefined)}
      >
        {(d) => (
          <div className="stack">
            {d.domains.map((domain) => (
              <Section key={domain.domain} title={domain.domain}>
                {domain.verifiedAt ? (
                  <p>Verified {when(domain.verifiedAt)}.</p>
                ) : (
                  <>
                    <p>Add this TXT record at your DNS provider, on the domain itself:</p>
                    <Copyable
                      label={`TXT record for ${domain.domain}`}
                      text={`${domain.domain}. IN TXT "${domain.verificationToken}"`}
                    />
                  </>
                )}
                {manage && (
                  <div className="row">
                    {!domain.verifiedAt && (
                      <button type="button" onClick={() => void verify.act(domain.domain)}>
                        Verify {domain.domain}
                      </button>
                    )}
                    <button
                      type="button"
                      className="secondary"
                      onClick={() => void regenerate.act(domain.domain)}
                    >
                      New token for {domain.domain}
                    </button>
                    <ConfirmButton
                      label={`Remove ${domain.domain}`}
                      question={`Remove ${domain.domain}? People with addresses there no longer find this workspace's single sign-on.`}
                      confirm={`Yes, remove ${domain.domain}`}
                      onConfirm={() => remove.act(domain.domain)}
                    />
                  </div>
                )}
              </Section>
            ))}
          </div>
        )}
      </QueryState>
      {manage && (
        <Section title="Add a domain">
          <ActionForm action={create} submit="Add domain">
            <Field label="Domain" name="domain" placeholder="example.com" required />
          </ActionForm>
        </Section>
      )}
    </Page>
  );
}

export function SsoSettingsPage() {
  const ws = useWs();
  const oidc = useQuery(SSOService.method.getOIDCProvider, { workspaceId: ws }, { retry: false });
  const saml = useQuery(SSOService.method.getSAMLProvider, { workspaceId: ws }, { retry: false });
  const access = useAccess(ws);
  const saveOidc = useAction((form: FormData) =>
    api.sso.updateOIDCProvider({
      workspaceId: ws,
      name: text(form, "name"),
      issuerUrl: text(form, "issuer"),
      clientId: text(form, "clientId"),
      clientSecret: String(form.get("clientSecret") ?? ""),
      scopes: text(form, "scopes")
        .split(/[\s,]+/)
        .filter(Boolean),
      emailClaim: text(form, "emailClaim"),
      nameClaim: text(form, "nameClaim"),
      usernameClaim: text(form, "usernameClaim"),
      ...providerFlags(form),
      usePkce: form.get("pkce") === "on",
    }),
  );
  const saveSaml = useAction((form: FormData) =>
    api.sso.updateSAMLProvider({
      workspaceId: ws,
      name: text(form, "name"),
      metadataUrl: text(form, "metadataUrl"),
      emailAttribute: text(form, "emailAttribute"),
      nameAttribute: text(form, "nameAttribute"),
      usernameAttribute: text(form, "usernameAttribute"),
      ...providerFlags(form),
    }),
  );
  const o = oidc.data?.oidcProvider;
  const s = saml.data?.samlProvider;
  const origin = window.location.origin;
  const notFound = (e: unknown) => (isCode(e, Code.NotFound) ? undefined : e);
  return (
    <Page title="Single sign-on">
      <Can access={access} need="sso.manage" doing="change single sign-on">
        <p>
          People sign in through your identity provider. Verify a domain first: sign-in finds the provider
          from the email's domain. Enforcing SSO hides the other ways to sign in for those addresses.
        </p>
        <Section title="OpenID Connect">
          <ErrorNote error={notFound(oidc.error)} />
          <p>
            Redirect URI to register at the provider: <code>{origin}/v1/sso/oidc/callback</code>
          </p>
          <ActionForm action={saveOidc} submit="Save OIDC provider" key={`o${o?.updatedAt?.seconds}`}>
            <Field label="Name" name="name" defaultValue={o?.name} required />
            <Field label="Issuer URL" name="issuer" type="url" defaultValue={o?.issuerUrl} required />
            <Field label="Client ID" name="clientId" defaultValue={o?.clientId} required />
            <Field
              label="Client secret"
              name="clientSecret"
              type="password"
              autoComplete="off"
              required
              hint="Write-only: enter it again to change other fields."
            />
            <Field
              label="Scopes"
              name="scopes"
              defaultValue={o?.scopes.join(" ") || "openid email profile"}
            />
            <Field label="Email claim" name="emailClaim" defaultValue={o?.emailClaim || "email"} />
            <Field label="Name claim" name="nameClaim" defaultValue={o?.nameClaim || "name"} />
            <Field
              label="Username claim"
              name="usernameClaim"
              defaultValue={o?.usernameClaim || "preferred_username"}
            />
            <Check label="Use PKCE" name="pkce" defaultChecked={o?.usePkce ?? true} />
            <ProviderChecks provider={o} />
          </ActionForm>
          {saveOidc.result && <Notice>Saved.</Notice>}
        </Section>
        <Section title="SAML">
          <ErrorNote error={notFound(saml.error)} />
          <p>
            Service provider metadata (its URL is the entity ID):{" "}
            <a href={`/v1/sso/saml/${ws}/metadata`} download="sp-metadata.xml">
              download SP metadata
            </a>
            . Assertion consumer service:{" "}
            <code>
              {origin}/v1/sso/saml/{ws}/acs
            </code>
          </p>
          <ActionForm action={saveSaml} submit="Save SAML provider" key={`s${s?.updatedAt?.seconds}`}>
            <Field label="Name" name="name" defaultValue={s?.name} required />
            <Field
              label="IdP metadata URL"
              name="metadataUrl"
              type="url"
              defaultValue={s?.metadataUrl}
              required
            />
            <Field
              label="Email attribute"
              name="emailAttribute"
              defaultValue={s?.emailAttribute || "email"}
            />
            <Field label="Name attribute" name="nameAttribute" defaultValue={s?.nameAttribute || "name"} />
            <Field
              label="Username attribute"
              name="usernameAttribute"
              defaultValue={s?.usernameAttribute || "username"}
            />
            <ProviderChecks provider={s} />
          </ActionForm>
          {saveSaml.result && <Notice>Saved.</Notice>}
        </Section>
      </Can>
    </Page>
  );
}

/** What an OIDC and a SAML provider both have: account creation, enforcement, being in use. */
interface ProviderFlags {
  readonly enforceSso: boolean;
  readonly allowJitProvisioning: boolean;
  readonly isActive: boolean;
}

function providerFlags(form: FormData): ProviderFlags {
  return {
    enforceSso: form.get("enforce") === "on",
    allowJitProvisioning: form.get("jit") === "on",
    isActive: form.get("active") === "on",
  };
}

function ProviderChecks({ provider }: { provider: ProviderFlags | undefined }) {
  return (
    <>
      <Check
        label="Create accounts on first sign-in"
        name="jit"
        defaultChecked={provider?.allowJitProvisioning}
      />
      <Check
        label="Enforce SSO for the workspace's domains"
        name="enforce"
        defaultChecked={provider?.enforceSso}
      />
      <Check label="Active" name="active" defaultChecked={provider?.isActive ?? true} />
    </>
  );
}

export function BillingPage() {
  const ws = useWs();
  const access = useAccess(ws);
  const billing = useQuery(
    BillingService.method.getBilling,
    { workspaceId: ws },
    { retry: false, enabled: access.can("billing.read") },
  );
  const license = useQuery(LicenseService.method.getLicense, {}, { retry: false });
  const checkout = useAction(async () => {
    const { url } = await api.billing.createCheckout({ workspaceId: ws });
    window.location.assign(url);
  });
  const portal = useAction(async () => {
    const { url } = await api.billing.createPortal({ workspaceId: ws });
    window.location.assign(url);
  });
  const cancel = useAction(() =>
    api.billing.cancelSubscription({ workspaceId: ws, immediate: false, reason: "" }),
  );
  const b = billing.data;
  return (
    <Page title="Billing and licence">
      <Section title="Licence">
        <QueryState query={license}>
          {(l) => (
            <dl className="facts">
              <dt>Plan</dt>
              <dd>{l.plan || "free"}</dd>
              <dt>Active</dt>
              <dd>{l.active ? "yes" : "no"}</dd>
              <dt>Expires</dt>
              <dd>{when(l.expiresAt)}</dd>
            </dl>
          )}
        </QueryState>
      </Section>
      <Section title="Subscription">
        <Can access={access} need="billing.read" doing="see the subscription">
          <ErrorNote error={billing.error} />
          {b && !b.billingEnabled && <p>Billing is not set up on this server.</p>}
          {b && (
            <>
              <dl className="facts">
                <dt>Product</dt>
                <dd>{b.productName || "—"}</dd>
                <dt>Status</dt>
                <dd>{b.status || "none"}</dd>
                <dt>Period ends</dt>
                <dd>{when(b.currentPeriodEnd)}</dd>
                <dt>Members</dt>
                <dd>{String(b.counts?.members ?? 0)}</dd>
                <dt>Targets</dt>
                <dd>{String(b.counts?.targets ?? 0)}</dd>
                <dt>Service accounts</dt>
                <dd>{String(b.counts?.serviceAccounts ?? 0)}</dd>
              </dl>
              {b.billingEnabled && access.can("billing.manage") && (
                <div className="row">
                  <button type="button" onClick={() => void checkout.act()}>
                    Subscribe
                  </button>
                  <button type="button" className="secondary" onClick={() => void portal.act()}>
                    Manage billing
                  </button>
                  <ConfirmButton
                    label="Cancel subscription"
                    question="Cancel the subscription at the end of the current period?"
                    confirm="Yes, cancel the subscription"
                    onConfirm={() => cancel.act()}
                  />
                </div>
              )}
              <ErrorNote error={checkout.error ?? portal.error ?? cancel.error} />
            </>
          )}
        </Can>
      </Section>
    </Page>
  );
}
