/**
 * A user certificate signed for one login of a target carries the limits of the grant it is
 * signed under, narrowed by what the request asks for:
 *
 * - **Which grant.** Of the subject's grants of that login that let it in now (its own, its teams',
 *   an on-request grant during an approved request), the most permissive one that allows what is
 *   asked: a grant without limits first, then the grant that allows the most. Grants are never
 *   merged: a certificate never allows what no single grant allows.
 * - **Asking for less.** Each field the request sets must lie within the grant: a permission the
 *   grant does not give, dropping `verify-required`, `sk` keys or the pin the grant imposes, an
 *   address outside its blocks or a command outside its list is `invalid_argument` naming the
 *   field. Fields left unset take the grant's value.
 * - **Step-up.** A grant that requires one signs only under a completed passkey step-up
 *   (../step-up.ts); a grant without the requirement is tried first.
 * - **Pinning.** `pinClientAddress` writes the address the server saw at issuance into
 *   `source-address`; it must lie within the grant's blocks when it has any.
 *
 * What sshd enforces is then written as OpenSSH options (certificateOptionsOf).
 *
 * @module
 */
import {
  COMMAND_ALLOWLIST_EXTENSION,
  encodeCommandAllowlist,
  SINGLE_USE_EXTENSION,
  TARGET_EXTENSION,
} from "@wap/ssh-wire/extensions";
import { InvalidArgumentError, PermissionDeniedError } from "../../errors.js";
import type { GrantLimitsInput } from "../../principals/grant-limits.js";
import { grantLetsIn } from "../../principals/grant-window.js";
import type { CertificateLimits } from "../../storage/certificates.js";
import type { GrantLimits, SubjectRef } from "../../storage/principals.js";
import type { Repositories } from "../../storage/storage.js";
import { addressCidr, cidrContains, formatCidr, parseCidr } from "../../validation/cidr.js";
import type { SshSignOption } from "./ssh-policy.js";

/** What a grant without limits allows when a request narrows it. */
const unlimited: GrantLimits = {
  pinClientAddress: false,
  sourceCidrs: [],
  permitPortForwarding: true,
  permitAgentForwarding: true,
  permitX11Forwarding: true,
  permitPty: true,
  verifyRequired: false,
  skKeysOnly: false,
  commands: [],
  requireStepUp: false,
};

const permissions = [
  "permitPortForwarding",
  "permitAgentForwarding",
  "permitX11Forwarding",
  "permitPty",
] as const;
const requirements = ["verifyRequired", "skKeysOnly", "pinClientAddress", "requireStepUp"] as const;

interface Violation {
  readonly field: string;
  readonly description: string;
}

class LimitsExceeded extends Error {
  constructor(readonly violations: readonly Violation[]) {
    super("the request asks for more than the grant allows");
  }
}

class AddressOutsideGrant extends Error {}

/** The address as source-address writes one host: without a prefix. */
function hostAddress(cidrText: string): string {
  return cidrText.replace(/\/(32|128)$/, "");
}

/**
 * The limits a certificate under `grant` carries for request `asked` from `clientAddress`, or
 * throws LimitsExceeded / AddressOutsideGrant.
 */
function narrow(
  grant: GrantLimits,
  asked: GrantLimitsInput | undefined,
  clientAddress: string,
): CertificateLimits {
  const violations: Violation[] = [];
  const value = (name: (typeof permissions)[number]) => {
    const want = asked?.[name];
    if (want === true && !grant[name]) {
      violations.push({ field: `limits.${name}`, description: "is not allowed by your grant of this login" });
    }
    return want ?? grant[name];
  };
  const required = (name: (typeof requirements)[number]) => {
    const want = asked?.[name];
    if (want === false && grant[name] === true) {
      violations.push({ field: `limits.${name}`, description: "is required by your grant of this login" });
    }
    return grant[name] === true || want === true;
  };
  const [permitPortForwarding, permitAgentForwarding, permitX11Forwarding, permitPty] =
    permissions.map(value);
  const [verifyRequired, skKeysOnly, pin, requireStepUp] = requirements.map(required);

  const grantBlocks = grant.sourceCidrs.map((c) => parseCidr(c)!);
  const askedCidrs = asked?.sourceCidrs ?? [];
  askedCidrs.forEach((text, index) => {
    const block = parseCidr(text)!;
    if (grantBlocks.length > 0 && !grantBlocks.some((outer) => cidrContains(outer, block))) {
      violations.push({
        field: `limits.sourceCidrs[${index}]`,
        description: "lies outside the addresses your grant of this login allows",
      });
    }
  });
  const askedCommands = asked?.commands ?? [];
  askedCommands.forEach((command, index) => {
    if (grant.commands.length > 0 && !grant.commands.includes(command)) {
      violations.push({
        field: `limits.commands[${index}]`,
        description: "is not among the commands your grant of this login allows",
      });
    }
  });
  if (violations.length > 0) throw new LimitsExceeded(violations);

  let sourceAddresses = askedCidrs.length > 0 ? askedCidrs : [...grant.sourceCidrs];
  if (pin) {
    const client = addressCidr(clientAddress);
    const blocks = sourceAddresses.map((c) => parseCidr(c)!);
    if (client === null || (blocks.length > 0 && !blocks.some((outer) => cidrContains(outer, client)))) {
      throw new AddressOutsideGrant();
    }
    sourceAddresses = [formatCidr(client)];
  }
  return {
    sourceAddresses: sourceAddresses.map(hostAddress),
    permitPortForwarding: permitPortForwarding!,
    permitAgentForwarding: permitAgentForwarding!,
    permitX11Forwarding: permitX11Forwarding!,
    permitPty: permitPty!,
    verifyRequired: verifyRequired!,
    skKeysOnly: skKeysOnly!,
    commands: askedCommands.length > 0 ? askedCommands : [...grant.commands],
    ...(requireStepUp && { requireStepUp: true }),
  };
}

/** How much a grant allows, to try the most permissive first (no limits: more than any). */
function breadth(limits: GrantLimits | undefined): number {
  if (limits === undefined) return Number.POSITIVE_INFINITY;
  const flags = permissions.filter((name) => limits[name]).length;
  const open = [
    !limits.pinClientAddress,
    limits.sourceCidrs.length === 0,
    !limits.verifyRequired,
    !limits.skKeysOnly,
    limits.commands.length === 0,
    limits.requireStepUp !== true,
  ].filter(Boolean).length;
  return flags + open;
}

/** The grant a certificate is signed under, and what the certificate carries. */
export interface ChosenGrant {
  readonly grant: GrantLimits | undefined;
  /** Undefined when neither grant nor request sets limits: the authority's own options apply. */
  readonly limits: CertificateLimits | undefined;
}

/**
 * Picks, of the subject's grants of the login (their limits; undefined for none), the most
 * permissive one that allows what is asked. Throws `invalid_argument` naming the fields when none
 * does, `permission_denied` when the pinned client address lies outside every grant's blocks.
 */
export function chooseGrant(
  grants: readonly (GrantLimits | undefined)[],
  asked: GrantLimitsInput | undefined,
  clientAddress: string,
): ChosenGrant {
  // A grant that lets in without a passkey step-up comes before any that requires one.
  const stepUp = (g: GrantLimits | undefined) => (g?.requireStepUp === true ? 1 : 0);
  const ordered = [...grants].sort((a, b) => stepUp(a) - stepUp(b) || breadth(b) - breadth(a));
  let firstFailure: unknown;
  for (const grant of ordered) {
    if (grant === undefined && asked === undefined) return { grant, limits: undefined };
    try {
      return { grant, limits: narrow(grant ?? unlimited, asked, clientAddress) };
    } catch (error) {
      firstFailure ??= error;
    }
  }
  if (firstFailure instanceof LimitsExceeded) {
    const first = firstFailure.violations[0]!;
    throw new InvalidArgumentError(`invalid request: ${first.field}: ${first.description}`, {
      reason: "LIMITS_EXCEED_GRANT",
      violations: firstFailure.violations,
    });
  }
  if (firstFailure instanceof AddressOutsideGrant) {
    throw new PermissionDeniedError(
      `your address ${clientAddress || "(unknown)"} is not among the addresses your grant of this login allows`,
      { reason: "SOURCE_ADDRESS_NOT_ALLOWED" },
    );
  }
  throw firstFailure;
}

/**
 * The critical options and extensions that make sshd enforce `limits`: `source-address`,
 * `verify-required`, `force-command` for a one-command list, each allowed forwarding and PTY as
 * its `permit-*` extension, and the command list in our own extension, which the CA's signature
 * covers.
 */
export function certificateOptionsOf(limits: CertificateLimits): {
  criticalOptions: Record<string, string>;
  extensions: Record<string, string>;
} {
  const criticalOptions: Record<string, string> = {};
  if (limits.sourceAddresses.length > 0) criticalOptions["source-address"] = limits.sourceAddresses.join(",");
  if (limits.verifyRequired) criticalOptions["verify-required"] = "";
  if (limits.commands.length === 1) criticalOptions["force-command"] = limits.commands[0]!;
  const extensions: Record<string, string> = {};
  if (limits.permitX11Forwarding) extensions["permit-X11-forwarding"] = "";
  if (limits.permitAgentForwarding) extensions["permit-agent-forwarding"] = "";
  if (limits.permitPortForwarding) extensions["permit-port-forwarding"] = "";
  if (limits.permitPty) extensions["permit-pty"] = "";
  if (limits.commands.length > 0) {
    extensions[COMMAND_ALLOWLIST_EXTENSION] = encodeCommandAllowlist(limits.commands);
  }
  return { criticalOptions, extensions };
}

/**
 * The template step of a certificate signed under a grant: the grant's principal, and the
 * options of its limits. The authority's own options still bind: a permission it does not give
 * stays off, its `force-command` wins, and addresses outside its `source-address` are dropped.
 */
export function grantLimitsOption(params: {
  readonly principal: string;
  readonly limits: CertificateLimits | undefined;
  readonly ca: {
    readonly userExtensions: Readonly<Record<string, string>>;
    readonly userCriticalOptions: Readonly<Record<string, string>>;
  };
}): SshSignOption {
  const { principal, limits, ca } = params;
  return {
    kind: "modifier",
    name: "grant-limits",
    modify(draft) {
      draft.principals = [principal];
      if (limits === undefined) return;
      const own = certificateOptionsOf(limits);
      const extensions: Record<string, string> = {};
      for (const [name, value] of Object.entries(own.extensions)) {
        if (name === COMMAND_ALLOWLIST_EXTENSION || name in ca.userExtensions) extensions[name] = value;
      }
      const criticalOptions = { ...own.criticalOptions };
      const caForce = ca.userCriticalOptions["force-command"];
      if (caForce !== undefined) criticalOptions["force-command"] = caForce;
      const caSource = ca.userCriticalOptions["source-address"];
      if (caSource !== undefined) {
        const outer = caSource.split(",").flatMap((c) => parseCidr(c.trim()) ?? []);
        const mine = own.criticalOptions["source-address"]?.split(",") ?? [];
        const kept = mine.filter((c) => outer.some((o) => cidrContains(o, parseCidr(c)!)));
        if (mine.length > 0 && kept.length === 0) {
          throw new PermissionDeniedError(
            "the addresses your grant allows lie outside this certificate authority's source-address",
            { reason: "SOURCE_ADDRESS_NOT_ALLOWED" },
          );
        }
        criticalOptions["source-address"] = kept.length > 0 ? kept.join(",") : caSource;
      }
      draft.criticalOptions = criticalOptions;
      draft.extensions = extensions;
    },
  };
}

/** Refuses a key that is not an sk- (FIDO) key when the limits ask for one. */
export function skKeysOnlyOption(limits: CertificateLimits | undefined): SshSignOption {
  return {
    kind: "key",
    name: "sk-keys-only",
    check(key) {
      if (!limits?.skKeysOnly || key.algorithm.startsWith("sk-")) return;
      const description = "must be an sk- (FIDO hardware) key: your grant of this login signs no other";
      throw new InvalidArgumentError(`invalid request: publicKey: ${description}`, {
        reason: "SK_KEY_REQUIRED",
        violations: [{ field: "publicKey", description }],
      });
    },
  };
}

/**
 * The limits of every grant of `login` on `targetId` that lets `subject` in at `at` (undefined for
 * a grant without limits): its own grant, its teams' (users), and an on-request grant while a
 * request of the caller for that login is approved.
 */
export async function grantsOfLogin(
  repos: Repositories,
  params: {
    readonly workspaceId: string;
    readonly targetId: string;
    readonly login: string;
    readonly subject: SubjectRef;
    readonly at: Date;
  },
): Promise<(GrantLimits | undefined)[]> {
  const { workspaceId, targetId, login, subject, at } = params;
  const principal = (await repos.principals.listByTargets(workspaceId, [targetId])).find(
    (p) => p.username === login,
  );
  if (!principal) return [];
  const teams =
    subject.kind === "user" ? new Set(await repos.teams.teamsOf(workspaceId, subject.id)) : new Set();
  const mine = principal.grants.filter(
    (g) =>
      (g.subject.kind === subject.kind && g.subject.id === subject.id) ||
      (g.subject.kind === "team" && teams.has(g.subject.id)),
  );
  const approved =
    subject.kind === "user" &&
    mine.some((g) => g.kind === "on_request") &&
    (await repos.accessRequests.activeOn(workspaceId, targetId, at)).some(
      (r) => r.requesterId === subject.id && r.login === login,
    );
  return mine.filter((g) => grantLetsIn(g, at) || (approved && g.kind === "on_request")).map((g) => g.limits);
}

/**
 * Binds a certificate to one target and one use: the target's agent refuses it on any other
 * target and refuses its serial a second time. Runs after the grant's options.
 */
export function singleUseOption(targetId: string): SshSignOption {
  return {
    kind: "modifier",
    name: "single-use",
    modify(draft) {
      draft.extensions = { ...draft.extensions, [TARGET_EXTENSION]: targetId, [SINGLE_USE_EXTENSION]: "" };
    },
  };
}
