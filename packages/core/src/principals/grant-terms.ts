/**
 * The terms of a grant: standing (until removed), time-bound (until a time) or on request (only
 * during an approved access request, under an approval policy). How they are read from a request,
 * written to the wire, and whether a grant lets its subject in at a given time.
 *
 * @module
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { durationFromMs, timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  type ApprovalPolicySchema,
  GrantKind,
  GrantKindSchema,
  type GrantSchema,
  PrincipalType,
} from "@wap/api";
import * as z from "zod";
import { workspaceRoles } from "../context.js";
import { InvalidArgumentError } from "../errors.js";
import type { GrantRecord, GrantTerms, SubjectKind } from "../storage/principals.js";
import type { Repositories } from "../storage/storage.js";
import { approvalLimits } from "../validation/bounds.js";
import { durationSeconds, enumValue, timestamp, uuid } from "../validation/rules.js";
import { type GrantLimitsInput, grantLimitsInput, limitsOf, toGrantLimitsMessage } from "./grant-limits.js";
import { teamNotFound } from "./not-found.js";

const noRepeats = (values: readonly string[], ctx: z.RefinementCtx) => {
  const seen = new Set<string>();
  values.forEach((value, index) => {
    if (seen.has(value))
      ctx.addIssue({ code: "custom", path: [index], message: `'${value}' is listed twice` });
    seen.add(value);
  });
};

const approvalInput = z
  .object({
    maxDuration: durationSeconds(approvalLimits.durationSeconds),
    approverRoles: z
      .array(z.enum(workspaceRoles, { message: `must be one of ${workspaceRoles.join(", ")}` }))
      .max(workspaceRoles.length, `at most ${workspaceRoles.length} roles`)
      .superRefine(noRepeats),
    approverTeamIds: z
      .array(uuid)
      .max(approvalLimits.approverTeams, `at most ${approvalLimits.approverTeams} teams`)
      .superRefine(noRepeats),
    approvalsRequired: z
      .number()
      .int()
      .min(
        approvalLimits.approvals.min,
        `must be between ${approvalLimits.approvals.min} and ${approvalLimits.approvals.max}`,
      )
      .max(
        approvalLimits.approvals.max,
        `must be between ${approvalLimits.approvals.min} and ${approvalLimits.approvals.max}`,
      )
      .optional(),
    reasonRequired: z.boolean().optional(),
  })
  .superRefine((policy, ctx) => {
    if (policy.approverRoles.length === 0 && policy.approverTeamIds.length === 0) {
      ctx.addIssue({
        code: "custom",
        path: ["approverRoles"],
        message: "name at least one approver role or approver team",
      });
    }
  });

/** The fields of AddSubjectsToPrincipal that set a grant's terms; checked together by {@link termsOf}. */
export const grantTermsInput = {
  kind: enumValue(GrantKindSchema, { definedOnly: true }).optional(),
  validUntil: timestamp.optional(),
  approval: approvalInput.optional(),
  limits: grantLimitsInput.optional(),
};

type TermsInput = {
  kind?: number | undefined;
  validUntil?: Date | undefined;
  approval?: z.output<typeof approvalInput> | undefined;
  limits?: GrantLimitsInput | undefined;
};

const invalid = (field: string, description: string) =>
  new InvalidArgumentError(`invalid request: ${field}: ${description}`, {
    violations: [{ field, description }],
  });

/**
 * The terms a request asks for, each kind with the one field it needs and none of the others; a
 * time-bound grant must end after `now`, and approver teams must be teams of the workspace.
 */
export async function termsOf(
  repos: Repositories,
  workspaceId: string,
  input: TermsInput,
  now: Date,
): Promise<GrantTerms> {
  const terms = await kindTermsOf(repos, workspaceId, input, now);
  return input.limits === undefined ? terms : { ...terms, limits: limitsOf(input.limits) };
}

async function kindTermsOf(
  repos: Repositories,
  workspaceId: string,
  input: TermsInput,
  now: Date,
): Promise<GrantTerms> {
  const kind = input.kind ?? GrantKind.UNSPECIFIED;
  if (kind !== GrantKind.TIME_BOUND && input.validUntil !== undefined) {
    throw invalid("validUntil", "is only for GRANT_KIND_TIME_BOUND");
  }
  if (kind !== GrantKind.ON_REQUEST && input.approval !== undefined) {
    throw invalid("approval", "is only for GRANT_KIND_ON_REQUEST");
  }
  if (kind === GrantKind.TIME_BOUND) {
    if (input.validUntil === undefined) throw invalid("validUntil", "is required for GRANT_KIND_TIME_BOUND");
    if (input.validUntil.getTime() <= now.getTime()) throw invalid("validUntil", "must be in the future");
    return { kind: "time_bound", validUntil: input.validUntil };
  }
  if (kind === GrantKind.ON_REQUEST) {
    const approval = input.approval;
    if (approval === undefined) throw invalid("approval", "is required for GRANT_KIND_ON_REQUEST");
    for (const id of approval.approverTeamIds) {
      if (!(await repos.teams.findById(workspaceId, id))) throw teamNotFound(id);
    }
    return {
      kind: "on_request",
      approval: {
        maxDurationSeconds: approval.maxDuration,
        approverRoles: approval.approverRoles,
        approverTeamIds: approval.approverTeamIds,
        approvalsRequired: approval.approvalsRequired ?? approvalLimits.approvals.min,
        reasonRequired: approval.reasonRequired ?? false,
      },
    };
  }
  return { kind: "standing" };
}

export { grantLetsIn } from "./grant-window.js";

const kindToWire = {
  standing: GrantKind.STANDING,
  time_bound: GrantKind.TIME_BOUND,
  on_request: GrantKind.ON_REQUEST,
};
const typeToWire: Record<SubjectKind, PrincipalType> = {
  user: PrincipalType.USER,
  team: PrincipalType.TEAM,
  service_account: PrincipalType.SERVICE_ACCOUNT,
};

export function toGrantMessage(grant: GrantRecord): MessageInitShape<typeof GrantSchema> {
  const approval: MessageInitShape<typeof ApprovalPolicySchema> | undefined =
    grant.kind === "on_request"
      ? {
          maxDuration: durationFromMs(grant.approval.maxDurationSeconds * 1000),
          approverRoles: [...grant.approval.approverRoles],
          approverTeamIds: [...grant.approval.approverTeamIds],
          approvalsRequired: grant.approval.approvalsRequired,
          reasonRequired: grant.approval.reasonRequired,
        }
      : undefined;
  return {
    type: typeToWire[grant.subject.kind],
    subjectId: grant.subject.id,
    kind: kindToWire[grant.kind],
    createdAt: timestampFromDate(grant.createdAt),
    ...(grant.kind === "time_bound" && { validUntil: timestampFromDate(grant.validUntil) }),
    ...(approval && { approval }),
    ...(grant.limits && { limits: toGrantLimitsMessage(grant.limits) }),
  };
}
