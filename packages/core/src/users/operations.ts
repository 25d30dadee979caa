/**
 * The caller's profile and account: UpdateProfile, SetEmailRecovery, ListLinkedAccounts,
 * UnlinkAccount and DeleteAccount (UserService).
 *
 * A new email address takes effect only when the link mailed to it is followed (VerifyEmail), so
 * nobody can claim an address they cannot read; the answer is the same whether or not the
 * address belongs to another account. Nothing may leave an account without a way to sign in, and
 * an account that alone owns a workspace cannot be deleted.
 *
 * @module
 */
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { UserService } from "@wap/api";
import * as z from "zod";
import { accountConfig, accountLink } from "../auth/account-config.js";
import { auditAccount } from "../auth/audit.js";
import { callerUser } from "../auth/caller-user.js";
import { toUserMessage } from "../auth/messages.js";
import { issuedRecently, issueOneTimeToken } from "../auth/one-time-tokens.js";
import { usernameTaken } from "../auth/operations.js";
import { revocationAuditEntries } from "../certificates/revocation.js";
import { signInMethods } from "../credentials/sign-in-methods.js";
import { notifyDaemonsOfChanges } from "../daemons/change-notifications.js";
import { FailedPreconditionError, NotFoundError } from "../errors.js";
import { sendInBackground } from "../mail/deliver.js";
import { mailerOf } from "../mail/mailer.js";
import { changeEmailMail } from "../mail/templates.js";
import { defineOperation } from "../operations/operation.js";
import type { Services } from "../operations/services.js";
import { UniqueViolationError } from "../storage/storage.js";
import type { UserRecord } from "../storage/users.js";
import { personName, profileUsername } from "../validation/bounds.js";
import { email, text } from "../validation/rules.js";
import { pictureUrl } from "./picture.js";

/**
 * Mails a confirmation link to `address`. Returns whether the caller should be told a mail went
 * out: the same answer when the address belongs to someone else (then nothing is sent).
 */
async function requestEmailChange(
  services: Services,
  user: UserRecord,
  address: string,
  now: Date,
): Promise<boolean> {
  const config = accountConfig(services);
  if (await issuedRecently(services, user.id, "change_email", now, config.mailIntervalSeconds)) return false;
  const token = await services.storage.transaction(async (tx) => {
    await tx.oneTimeTokens.deleteForUser(user.id, "change_email");
    return issueOneTimeToken(tx, services, {
      purpose: "change_email",
      userId: user.id,
      data: { email: address },
      ttlSeconds: config.emailVerificationTtlSeconds,
      now,
    });
  });
  if (await services.storage.users.findByEmail(address)) return mailerOf(services) !== undefined;
  const link = accountLink(config, "/verify-email", { token });
  return sendInBackground(services, changeEmailMail(address, link, config.emailVerificationTtlSeconds));
}

export const updateProfile = defineOperation({
  method: UserService.method.updateProfile,
  access: { kind: "caller", callers: ["user"] },
  input: z.object({
    name: personName.optional(),
    email: email.optional(),
    username: profileUsername.optional(),
    // No rule in the contract: a web address, checked in run (users/picture.ts) as it depends on
    // where the platform is reached.
    picture: text({}).optional(),
  }),
  async run({ input, services, ctx, now }) {
    let user = await callerUser(services, ctx);
    const patch = {
      ...(input.name === undefined ? {} : { name: input.name }),
      ...(input.username === undefined ? {} : { username: input.username }),
      ...(input.picture === undefined ? {} : { picture: pictureUrl(input.picture, services) }),
    };
    if (Object.keys(patch).length > 0) {
      try {
        user =
          (await services.storage.transaction(async (tx) => {
            const updated = await tx.users.update(user.id, patch, now);
            await auditAccount(tx, services, ctx, {
              userId: user.id,
              action: "user.profile.update",
              resource: `user:${user.id}`,
              at: now,
            });
            return updated;
          })) ?? user;
      } catch (error) {
        if (error instanceof UniqueViolationError && error.constraint === "users.username") {
          throw usernameTaken(input.username ?? "");
        }
        throw error;
      }
    }
    const address = input.email?.toLowerCase();
    const emailSent =
      address !== undefined && address !== user.email
        ? await requestEmailChange(services, user, address, now)
        : false;
    return { user: toUserMessage(user), emailSent };
  },
});

export const setEmailRecovery = defineOperation({
  method: UserService.method.setEmailRecovery,
  access: { kind: "caller", callers: ["user"] },
  input: z.object({ enable: z.boolean().optional() }),
  async run({ input, services, ctx, now }) {
    const user = await callerUser(services, ctx);
    const enable = input.enable;
    if (enable === undefined || enable === user.enableEmailRecovery) return {};
    await services.storage.transaction(async (tx) => {
      await tx.users.update(user.id, { enableEmailRecovery: enable }, now);
      await auditAccount(tx, services, ctx, {
        userId: user.id,
        action: enable ? "user.email_recovery.enable" : "user.email_recovery.disable",
        resource: `user:${user.id}`,
        at: now,
      });
    });
    return {};
  },
});

export const listLinkedAccounts = defineOperation({
  method: UserService.method.listLinkedAccounts,
  access: { kind: "caller", callers: ["user"] },
  input: z.object({}),
  async run({ services, ctx }) {
    const user = await callerUser(services, ctx);
    const accounts = await services.storage.linkedAccounts.listByUser(user.id);
    return {
      accounts: accounts.map((a) => ({
        providerId: a.providerId,
        provider: a.provider,
        providerEmail: a.providerEmail,
        providerUsername: a.providerUsername,
        protocol: a.protocol,
        createdAt: timestampFromDate(a.createdAt),
      })),
    };
  },
});

export const unlinkAccount = defineOperation({
  method: UserService.method.unlinkAccount,
  access: { kind: "caller", callers: ["user"] },
  input: z.object({ provider: text({ min: 1 }) }),
  async run({ input, services, ctx, now }) {
    const { provider } = input;
    const user = await callerUser(services, ctx);
    await services.storage.transaction(async (tx) => {
      const links = await tx.linkedAccounts.listByUser(user.id);
      if (!links.some((l) => l.provider === provider)) {
        throw new NotFoundError(`no ${provider} account is linked`);
      }
      const methods = await signInMethods(tx, user);
      if (!methods.password && methods.passkeys === 0 && methods.linkedAccounts <= 1) {
        throw new FailedPreconditionError(
          "this linked account is the only way to sign in: set a password or add a passkey first",
          { reason: "LAST_SIGN_IN_METHOD" },
        );
      }
      await tx.linkedAccounts.delete(user.id, provider);
      await auditAccount(tx, services, ctx, {
        userId: user.id,
        action: "user.linked_account.delete",
        resource: `linked_account:${provider}`,
        at: now,
      });
    });
    return {};
  },
});

export const deleteAccount = defineOperation({
  method: UserService.method.deleteAccount,
  access: { kind: "caller", callers: ["user"] },
  input: z.object({}),
  async run({ services, ctx, now }) {
    const user = await callerUser(services, ctx);
    const revoked = await services.storage.transaction(async (tx) => {
      const owned = await tx.members.listSoleOwnerships(user.id);
      if (owned.length > 0) {
        throw new FailedPreconditionError(
          `you are the only owner of workspace(s) ${owned.join(", ")}: transfer ownership or delete them first`,
          { reason: "SOLE_WORKSPACE_OWNER" },
        );
      }
      // Memberships, sessions (so every token), passkeys, backup codes, devices and links go with
      // it, and so do the certificates it holds in any workspace.
      const certificates = await tx.issuedCertificates.revokeAllOfRequester(user.id, {
        revokedAt: now,
        reason: "affiliation_changed",
        revokedBy: "system:user.delete",
      });
      await tx.users.delete(user.id);
      await auditAccount(tx, services, ctx, {
        userId: user.id,
        action: "user.delete",
        resource: `user:${user.id}`,
        at: now,
      });
      return certificates;
    });
    // Committed: the daemons of the authorities concerned fetch their revocation lists again.
    await notifyDaemonsOfChanges(services, "", revocationAuditEntries(revoked));
    return {};
  },
});

export const userOperations = [
  updateProfile,
  setEmailRecovery,
  listLinkedAccounts,
  unlinkAccount,
  deleteAccount,
];
