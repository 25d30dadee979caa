/**
 * Every bound the contract puts on a field, by meaning. Operation schemas import these.
 *
 * @module
 */
import type * as z from "zod";
import { endpointForm, isEndpoint } from "./endpoint.js";
import { looksLikeUuid, text } from "./rules.js";

/**
 * Names that could be taken for an id are refused: an id names exactly one subject (in
 * certificates, audit entries, principals), and no name may be mistaken for another's id.
 */
function notIdShaped<S extends z.ZodType<string>>(schema: S) {
  return schema.refine((value) => !looksLikeUuid(value), {
    message: "must not have the form of an id (a UUID)",
  });
}

// `^[a-zA-Z0-9][a-zA-Z0-9-_]*$` (service-account and target names) and Unix login names: the
// forms the clients check again, defined with them.
import { loginNamePattern, resourceNamePattern } from "@wap/ssh-wire/forms";

export { loginNamePattern, resourceNamePattern };

export const workspaceName = text({ min: 3, max: 256 });
/** Team, certificate authority names. */
export const plainName = text({ min: 1, max: 256 });
/** Service-account and target names. */
export const resourceName = text({
  min: 1,
  max: 256,
  pattern: resourceNamePattern,
  patternHint: "must start with a letter or digit and contain only letters, digits, '-' and '_'",
});
/** Service-account names: resource names that are not id-shaped. */
export const serviceAccountName = notIdShaped(resourceName);
export const description = text({ max: 1000 });
/** Service-account roles: empty (the default, viewer), viewer or editor. */
export const serviceAccountRoleName = text({
  max: 6,
  pattern: /^(viewer|editor)?$/,
  patternHint: "must be 'viewer', 'editor' or empty",
});

/** Certificate authority lifetime: 730h to 87600h. */
export const caLifetimeBounds = { min: 2_628_000, max: 315_360_000 } as const;
/** Certificate TTLs (user/host default and max, signing ttl): 1m to 8760h. */
export const certificateTtlBounds = { min: 60, max: 31_536_000 } as const;
/** Enrolment and invitation token expiry: 5m to 30 days. */
export const tokenExpiryBounds = { min: 300, max: 2_592_000 } as const;

/** Register: user name 3-256, username 3-32 with a pattern, password 8-256. */
export const personName = text({ min: 3, max: 256 });
const usernameRule = {
  pattern: /^[a-zA-Z0-9]([a-zA-Z0-9_-])*[a-zA-Z0-9]$/,
  patternHint: "must start and end with a letter or digit and contain only letters, digits, '-' and '_'",
};
export const username = notIdShaped(text({ min: 3, max: 32, ...usernameRule }));
// Passwords may hold any character but NUL: they are hashed, never shown or written to a file.
export const newPassword = text({ min: 8, max: 256, controlCharacters: "allowed" });

/** UpdatePassword and ResetPassword: at least 8, no maximum. */
export const replacementPassword = text({ min: 8, controlCharacters: "allowed" });
/** The current password (Login, UpdatePassword, DeletePassword): at least 1, no maximum. */
export const currentPassword = text({ min: 1, controlCharacters: "allowed" });
/** UpdateProfile: a username of 3 to 39 characters (GitHub's limit; Register allows 32). */
export const profileUsername = notIdShaped(text({ min: 3, max: 39, ...usernameRule }));
/** UpdateProfile's picture: a web address of at most 2048 characters, or empty (no picture). */
export const pictureUrlMaxLength = 2048;
/** Passkey names: 1 to 100 characters. */
export const passkeyName = text({ min: 1, max: 100 });

/** CreateWorkspaceDomain: lower-case labels and a top-level domain of letters, 4 to 253 characters. */
export const workspaceDomain = text({
  min: 4,
  max: 253,
  pattern: /^([a-z0-9]+(-[a-z0-9]+)*\.)+[a-z]{2,}$/,
  patternHint: "must be a lower-case domain name such as example.com",
});
/** Principal usernames (SetPrincipals): Unix login names of 1 to 32 characters, optionally ending in '$'. */
export const principalUsername = text({
  min: 1,
  max: 32,
  pattern: loginNamePattern,
  patternHint:
    "must be a Unix login name: a lower-case letter or '_', then [a-z0-9_-], optionally a final '$'",
});
/** Invite tokens in a path: at least 1 character. */
export const inviteToken = text({ min: 1 });
/** Subject ids of Add/RemoveSubjectsToPrincipal: 1 to 50 per call. */
export const subjectIdCount = { min: 1, max: 50 } as const;
/**
 * Our own limits where the contract sets none, so no request can make a row unbounded: tags of
 * teams and targets (as service accounts'), target endpoints (`host:port`), usernames per target.
 */
export const tagLimits = { length: 64, count: 50 } as const;
export const endpointLimits = { length: 261, count: 32 } as const;
export const principalsPerTarget = 256;
/**
 * Approval policies of on-request grants: a request lasts 1 minute to 7 days; at most the four
 * roles and 50 approver teams; 1 to 10 distinct approvals.
 */
export const approvalLimits = {
  durationSeconds: { min: 60, max: 604_800 },
  approverTeams: 50,
  approvals: { min: 1, max: 10 },
} as const;
/** Grant limits: at most 32 source addresses (each up to an IPv6 CIDR's length) and 32 commands of 1 to 1024 characters. */
export const grantLimitBounds = {
  cidrs: 32,
  cidrLength: 64,
  commands: 32,
  commandLength: 1024,
} as const;
/** A target endpoint (endpoint.ts): a host name or an IP address with an optional port. */
export const endpoint = text({
  min: 1,
  max: endpointLimits.length,
  patternHint: `must be ${endpointForm}`,
}).refine(isEndpoint, { message: `must be ${endpointForm}` });
