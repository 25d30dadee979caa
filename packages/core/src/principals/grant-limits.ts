/**
 * The limits of a grant: what an SSH certificate signed under it may allow (source addresses,
 * forwarding, PTY, FIDO user verification, sk- keys only, a command allowlist, a passkey step-up
 * for each connection). How they are read
 * from a request, written to the wire, and which certificate principal they go with.
 *
 * A grant without limits lets certificates carry the authority's own options, as before limits
 * existed; a grant with limits allows nothing it does not name.
 *
 * @module
 */
import { createHash } from "node:crypto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { GrantLimitsSchema } from "@wap/api";
import * as z from "zod";
import { InvalidArgumentError } from "../errors.js";
import type { CertificateLimits } from "../storage/certificates.js";
import type { GrantLimits } from "../storage/principals.js";
import { grantLimitBounds } from "../validation/bounds.js";
import { formatCidr, parseCidr } from "../validation/cidr.js";
import { text } from "../validation/rules.js";

const noRepeats = (values: readonly string[], ctx: z.RefinementCtx) => {
  const seen = new Set<string>();
  values.forEach((value, index) => {
    if (seen.has(value))
      ctx.addIssue({ code: "custom", path: [index], message: `'${value}' is listed twice` });
    seen.add(value);
  });
};

/** An address or CIDR block, normalised (`10.1.2.3/32`, `2001:db8::/32`). */
const cidr = text({ min: 1, max: grantLimitBounds.cidrLength }).transform((value, ctx) => {
  const parsed = parseCidr(value);
  if (parsed === null) {
    ctx.addIssue({
      code: "custom",
      message: "must be an IPv4 or IPv6 address or CIDR block such as 10.0.0.0/8",
    });
    return z.NEVER;
  }
  return formatCidr(parsed);
});

/** A command as the session's `SSH_ORIGINAL_COMMAND` must equal it: printable, one line. */
const command = text({ min: 1, max: grantLimitBounds.commandLength });

/** The GrantLimits message as a request carries it; absent fields are unset. */
export const grantLimitsInput = z.object({
  pinClientAddress: z.boolean().optional(),
  sourceCidrs: z
    .array(cidr)
    .max(grantLimitBounds.cidrs, `at most ${grantLimitBounds.cidrs} addresses`)
    .superRefine(noRepeats),
  permitPortForwarding: z.boolean().optional(),
  permitAgentForwarding: z.boolean().optional(),
  permitX11Forwarding: z.boolean().optional(),
  permitPty: z.boolean().optional(),
  verifyRequired: z.boolean().optional(),
  skKeysOnly: z.boolean().optional(),
  commands: z
    .array(command)
    .max(grantLimitBounds.commands, `at most ${grantLimitBounds.commands} commands`)
    .superRefine(noRepeats),
  requireStepUp: z.boolean().optional(),
});

export type GrantLimitsInput = z.output<typeof grantLimitsInput>;

/** The limits of a grant from a request: what is not set is off. */
export function limitsOf(input: GrantLimitsInput): GrantLimits {
  return {
    pinClientAddress: input.pinClientAddress ?? false,
    sourceCidrs: input.sourceCidrs,
    permitPortForwarding: input.permitPortForwarding ?? false,
    permitAgentForwarding: input.permitAgentForwarding ?? false,
    permitX11Forwarding: input.permitX11Forwarding ?? false,
    permitPty: input.permitPty ?? false,
    verifyRequired: input.verifyRequired ?? false,
    skKeysOnly: input.skKeysOnly ?? false,
    commands: input.commands,
    ...(input.requireStepUp === true && { requireStepUp: true }),
  };
}

export function toGrantLimitsMessage(limits: GrantLimits): MessageInitShape<typeof GrantLimitsSchema> {
  return {
    ...limits,
    sourceCidrs: [...limits.sourceCidrs],
    commands: [...limits.commands],
    requireStepUp: limits.requireStepUp === true,
  };
}

/** What a certificate carries, in the same message (its source addresses as `sourceCidrs`). */
export function toCertificateLimitsMessage(
  limits: CertificateLimits,
): MessageInitShape<typeof GrantLimitsSchema> {
  const { sourceAddresses, ...rest } = limits;
  return {
    ...rest,
    pinClientAddress: false,
    sourceCidrs: [...sourceAddresses],
    commands: [...limits.commands],
    requireStepUp: limits.requireStepUp === true,
  };
}

/**
 * The limits in a fixed order, so equal limits give equal text. A step-up requirement is added
 * only when set, so the principals of grants made before it existed stay the same.
 */
function canonical(limits: GrantLimits): string {
  const stepUp = limits.requireStepUp === true ? ["step-up"] : [];
  return JSON.stringify([
    limits.pinClientAddress,
    [...limits.sourceCidrs].sort(),
    limits.permitPortForwarding,
    limits.permitAgentForwarding,
    limits.permitX11Forwarding,
    limits.permitPty,
    limits.verifyRequired,
    limits.skKeysOnly,
    [...limits.commands].sort(),
    ...stepUp,
  ]);
}

/**
 * The certificate principal a grant lets in: the subject id for a grant without limits, else the
 * subject id and a digest of the limits (`<id>+<16 hex>`). The daemon's principals file lists
 * exactly these, so a certificate signed under one grant's limits is accepted only where the
 * subject holds a grant with the same limits, and a certificate without limits never where every
 * grant of the subject has some.
 */
export function grantPrincipal(subjectId: string, limits: GrantLimits | undefined): string {
  if (limits === undefined) return subjectId;
  const digest = createHash("sha256").update(canonical(limits)).digest("hex").slice(0, 16);
  return `${subjectId}+${digest}`;
}

/**
 * A step-up is a passkey given by a person at each connection: a service account has no passkey,
 * so a grant to one cannot require it (`invalid_argument` naming the field). Teams hold users only.
 */
export function refuseStepUpForServiceAccounts(
  kind: string,
  limits: Pick<GrantLimitsInput, "requireStepUp"> | undefined,
): void {
  if (kind !== "service_account" || limits?.requireStepUp !== true) return;
  const description =
    "cannot be set on a grant to a service account: a step-up is a passkey a person gives at each connection";
  throw new InvalidArgumentError(`invalid request: limits.requireStepUp: ${description}`, {
    reason: "STEP_UP_NOT_FOR_SERVICE_ACCOUNTS",
    violations: [{ field: "limits.requireStepUp", description }],
  });
}
