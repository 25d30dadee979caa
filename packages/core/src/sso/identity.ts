/**
 * From an identity the provider vouched for to a signed-in user of ours.
 *
 * 1. An identity linked before (same provider, same issuer and subject) signs in its user.
 *    A user has one link per workspace provider: linking a new identity replaces the old one.
 * 2. Otherwise the provider's email address decides, and only for an address in a domain this
 *    workspace has verified: a workspace's IdP could assert any address, so it is trusted only
 *    for the domains the workspace proved it controls.
 *    - An account with that (verified) address is linked to the identity.
 *    - With no account, one is created when the provider allows JIT provisioning.
 * 3. With JIT provisioning on, the user also becomes a member (viewer) of the workspace.
 *
 * Every change is written with its audit entries in one transaction; the login session after.
 *
 * @module
 */
import { appendAudit, type RequestFacts } from "../audit/record.js";
import { emailDomain } from "../auth/directory.js";
import { startSession } from "../auth/sessions.js";
import { FailedPreconditionError, PermissionDeniedError } from "../errors.js";
import { toHex } from "../lib/bytes.js";
import type { Services } from "../operations/services.js";
import type { SsoProtocol } from "../storage/sso.js";
import { type Repositories, UniqueViolationError } from "../storage/storage.js";
import type { UserRecord } from "../storage/users.js";
import { checkPictureUrl } from "../users/picture.js";
import { looksLikeUuid } from "../validation/rules.js";

/** An identity an identity provider vouched for. */
export interface ExternalIdentity {
  readonly workspaceId: string;
  readonly protocol: SsoProtocol;
  /** The SSOProvider id, for audit entries. */
  readonly providerRecordId: string;
  /** `<issuer>|<subject>`: subjects are unique only per issuer. */
  readonly providerId: string;
  /** "" when the provider sent none. */
  readonly email: string;
  /** What the provider says about the address; undefined when it says nothing. */
  readonly emailVerified: boolean | undefined;
  readonly name: string;
  readonly username: string;
  readonly picture: string;
  readonly allowJitProvisioning: boolean;
}

/** A finished SSO sign-in: the tokens of the new session, and what happened on the way. */
export interface SsoSignIn {
  readonly accessToken: string;
  readonly refreshToken: string;
  readonly userId: string;
  readonly workspaceId: string;
  /** The user was created by this sign-in (JIT provisioning). */
  readonly created: boolean;
  /** The identity was linked to the user by this sign-in. */
  readonly linked: boolean;
}

/** The linked-account provider name of a workspace's IdP, e.g. `oidc-<workspace id>`. */
export function linkedProviderName(protocol: SsoProtocol, workspaceId: string): string {
  return `${protocol}-${workspaceId}`;
}

const usernamePattern = /^[a-zA-Z0-9]([a-zA-Z0-9_-])*[a-zA-Z0-9]$/;

/** A username (3 to 32 characters of the Register pattern) made from what the provider sent. */
export function usernameFrom(preferred: string, email: string): string {
  const clean = (raw: string) =>
    raw
      .replace(/[^a-zA-Z0-9_-]+/g, "-")
      .replace(/^[-_]+/, "")
      .slice(0, 32)
      .replace(/[-_]+$/, "");
  // Some providers send an object id as the username: no username may look like an id.
  const usable = (name: string) => name.length >= 3 && !looksLikeUuid(name);
  let base = clean(preferred);
  if (!usable(base)) base = clean(email.split("@")[0] ?? "");
  if (base.length < 3) base = `user${base}`.slice(0, 32);
  return usernamePattern.test(base) && usable(base) ? base : "user";
}

function cut(text: string, max: number): string {
  return [...text].slice(0, max).join("");
}

/** The provider's picture when it is a URL a profile may carry (the rule of UpdateProfile), else none. */
function pictureOrEmpty(value: string, services: Services): string {
  return checkPictureUrl(value, services) === null ? value : "";
}

async function insertUser(tx: Repositories, services: Services, identity: ExternalIdentity, now: Date) {
  const email = identity.email.toLowerCase();
  const base = usernameFrom(identity.username, email);
  for (let attempt = 0; ; attempt++) {
    const username = attempt === 0 ? base : `${base.slice(0, 27)}-${toHex(services.random.bytes(2))}`;
    const user: UserRecord = {
      id: services.random.uuid(),
      name: cut(identity.name.trim() || email.split("@")[0] || email, 256),
      username,
      email,
      // The provider vouched for the address, in a domain the workspace verified.
      emailVerified: true,
      picture: pictureOrEmpty(identity.picture, services),
      passwordHash: null,
      enableEmailRecovery: false,
      createdAt: now,
      updatedAt: now,
    };
    try {
      await tx.users.insert(user);
      return user;
    } catch (error) {
      const taken = error instanceof UniqueViolationError && error.constraint === "users.username";
      if (!taken || attempt >= 5) throw error;
    }
  }
}

/** Finds, links or creates the user of `identity`, inside `tx`. */
async function resolveUser(
  tx: Repositories,
  services: Services,
  identity: ExternalIdentity,
  request: RequestFacts,
  now: Date,
): Promise<{ user: UserRecord; created: boolean; linked: boolean }> {
  const provider = linkedProviderName(identity.protocol, identity.workspaceId);
  const link = await tx.ssoDirectory.findLinkedAccount(provider, identity.providerId);
  if (link) {
    const user = await tx.users.findById(link.userId);
    if (user) return { user, created: false, linked: false };
  }

  if (identity.email === "") {
    throw new PermissionDeniedError(
      "the identity provider sent no email address: check the provider's email claim or attribute",
      { reason: "SSO_NO_EMAIL" },
    );
  }
  const domain = emailDomain(identity.email);
  if ((await tx.ssoDirectory.workspaceForVerifiedDomain(domain)) !== identity.workspaceId) {
    throw new PermissionDeniedError(
      `${domain} is not a verified domain of this workspace: its identity provider cannot sign in ${identity.email}`,
      { reason: "SSO_DOMAIN_NOT_VERIFIED" },
    );
  }
  if (identity.emailVerified === false) {
    throw new PermissionDeniedError("the identity provider says this email address is not verified", {
      reason: "SSO_EMAIL_NOT_VERIFIED",
    });
  }

  let user = await tx.users.findByEmail(identity.email);
  let created = false;
  if (user) {
    // Whoever registered an address without proving it may not be the address's owner.
    if (!user.emailVerified) {
      throw new FailedPreconditionError(
        "an account with this email address exists but has not verified it: verify it, then sign in with SSO",
        { reason: "ACCOUNT_EMAIL_NOT_VERIFIED" },
      );
    }
  } else {
    if (!identity.allowJitProvisioning) {
      throw new PermissionDeniedError(
        `no account uses ${identity.email}, and this workspace does not create accounts at sign-in (JIT provisioning is off)`,
        { reason: "SSO_JIT_DISABLED" },
      );
    }
    user = await insertUser(tx, services, identity, now);
    created = true;
    await appendAudit(tx, services, request, {
      workspaceId: null,
      actorType: "user",
      actorId: user.id,
      action: `user.register.${identity.protocol}`,
      resource: `user:${user.id}`,
      at: now,
    });
  }
  // A link to another identity of the same provider is replaced: the workspace moved to another
  // IdP (subjects are per issuer), or the address now belongs to a new identity there.
  const replaced = (await tx.linkedAccounts.listByUser(user.id)).some((l) => l.provider === provider);
  if (replaced) await tx.linkedAccounts.delete(user.id, provider);
  await tx.linkedAccounts.insert({
    userId: user.id,
    provider,
    providerId: identity.providerId,
    providerEmail: identity.email.toLowerCase(),
    providerUsername: identity.username,
    protocol: identity.protocol,
    createdAt: now,
  });
  await appendAudit(tx, services, request, {
    workspaceId: null,
    actorType: "user",
    actorId: user.id,
    action: replaced ? "user.linked_account.replace" : "user.linked_account.create",
    resource: `linked_account:${provider}`,
    at: now,
  });
  return { user, created, linked: true };
}

/** Signs `identity` in: resolves its user (see the module comment), then starts a session. */
export async function signInExternalIdentity(
  services: Services,
  identity: ExternalIdentity,
  request: RequestFacts,
): Promise<SsoSignIn> {
  const now = services.clock.now();
  const resolve = () =>
    services.storage.transaction(async (tx) => {
      const outcome = await resolveUser(tx, services, identity, request, now);
      const { user } = outcome;
      if (identity.allowJitProvisioning && !(await tx.members.find(identity.workspaceId, user.id))) {
        await tx.members.insert({
          workspaceId: identity.workspaceId,
          userId: user.id,
          role: "viewer",
          createdAt: now,
          updatedAt: now,
        });
        await appendAudit(tx, services, request, {
          workspaceId: identity.workspaceId,
          actorType: "user",
          actorId: user.id,
          action: "member.add.sso",
          resource: `member:${user.id}`,
          at: now,
        });
      }
      await appendAudit(tx, services, request, {
        workspaceId: identity.workspaceId,
        actorType: "user",
        actorId: user.id,
        action: `sso.login.${identity.protocol}`,
        resource: `${identity.protocol}_provider:${identity.providerRecordId}`,
        at: now,
      });
      return outcome;
    });
  let outcome: Awaited<ReturnType<typeof resolve>>;
  try {
    outcome = await resolve();
  } catch (error) {
    // A concurrent first sign-in of the same person created the user or the link: use theirs.
    const raced =
      error instanceof UniqueViolationError &&
      (error.constraint === "users.email" || error.constraint === "linked_accounts.provider_id");
    if (!raced) throw error;
    outcome = await resolve();
  }
  // Sign-in methods are named in the audit log (`user.login.oidc`, `user.login.saml`).
  const session = await startSession(services, outcome.user, request, identity.protocol);
  return {
    accessToken: session.accessToken,
    refreshToken: session.refreshToken,
    userId: outcome.user.id,
    workspaceId: identity.workspaceId,
    created: outcome.created,
    linked: outcome.linked,
  };
}
