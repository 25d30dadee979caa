import { StepUpState } from "@wap/api";
import type { CallContext } from "../context.js";
import { FailedPreconditionError, InvalidArgumentError, NotFoundError } from "../errors.js";
import type { OperationCall } from "../operations/operation.js";
import type { SshStepUpWithUses, StepUpTarget } from "../storage/ssh-step-ups.js";
import type { ValidityDraft } from "./issuance/options.js";
import type { SignOption } from "./issuance/pipeline.js";

/** The whole validity of a certificate signed under a step-up. */
const stepUpCertificateSeconds = 60;

export type Call = Pick<OperationCall<unknown>, "services" | "workspace" | "now" | "ctx" | "audit">;

const stepUpNotFound = (id: string) =>
  new NotFoundError(`step-up ${id} not found`, { reason: "STEP_UP_NOT_FOUND" });

export function stateOf(stepUp: SshStepUpWithUses, now: Date): StepUpState {
  if (now.getTime() >= stepUp.expiresAt.getTime()) return StepUpState.EXPIRED;
  return stepUp.completedAt === null ? StepUpState.PENDING : StepUpState.COMPLETED;
}

export const isSigned = (stepUp: SshStepUpWithUses, t: StepUpTarget) =>
  stepUp.signed.some((s) => s.targetId === t.targetId && s.login === t.login);

/** Writes a refusal to the audit log (its own transaction: the call then fails). */
export async function auditRefusal(call: Call, stepUpId: string, reason: string): Promise<void> {
  await call.services.storage.transaction((tx) =>
    call.audit(tx, { action: "ssh_step_up.refuse", resource: `ssh_step_up:${stepUpId} reason=${reason}` }),
  );
}

const callerUserId = (ctx: CallContext) => (ctx.caller.kind === "user" ? ctx.caller.userId : "");

/** The caller's own step-up, or `not_found` (another user's is audited as a refusal). */
export async function ownStepUp(call: Call, id: string): Promise<SshStepUpWithUses> {
  const stepUp = await call.services.storage.sshStepUps.findById(call.workspace.workspaceId, id);
  if (stepUp === null) throw stepUpNotFound(id);
  if (stepUp.userId !== callerUserId(call.ctx)) {
    await auditRefusal(call, id, "other_user");
    throw stepUpNotFound(id);
  }
  return stepUp;
}

/** A certificate request under a grant that requires a step-up: the step-up and the login it claims. */
interface StepUpUse {
  readonly stepUp: SshStepUpWithUses;
  readonly target: StepUpTarget;
}

/**
 * Whether a user certificate for `login` on `targetId` under a grant (`required`: it requires a
 * step-up) may be signed with `stepUpId`: none needed and none named, or a completed, unexpired
 * step-up of the caller listing the login with no certificate signed for it yet. Refusals of a
 * required step-up are audited.
 */
export async function checkStepUp(
  call: Call,
  params: {
    readonly required: boolean;
    readonly stepUpId: string | undefined;
    readonly targetId: string | undefined;
    readonly login: string | undefined;
  },
): Promise<StepUpUse | undefined> {
  const { required, stepUpId, targetId, login } = params;
  if (!required) {
    if (stepUpId === undefined) return undefined;
    if (login === undefined) {
      const description = "needs login: a step-up is for a login whose grant requires one";
      throw new InvalidArgumentError(`invalid request: stepUpId: ${description}`, {
        violations: [{ field: "stepUpId", description }],
      });
    }
    throw new FailedPreconditionError(
      `stepUpId: your grant of login '${login}' on this target requires no step-up; sign without one`,
      { reason: "STEP_UP_NOT_REQUIRED" },
    );
  }
  const target = { targetId: targetId!, login: login! };
  if (stepUpId === undefined) {
    await call.services.storage.transaction((tx) =>
      call.audit(tx, {
        action: "ssh_step_up.refuse",
        resource: `target:${target.targetId} login=${target.login} reason=no_step_up`,
      }),
    );
    throw new FailedPreconditionError(
      `your grant of login '${target.login}' on this target requires a passkey step-up for each connection: begin one (BeginSSHStepUp, or \`wap ssh\`), give your passkey, then send its id as stepUpId`,
      { reason: "STEP_UP_REQUIRED" },
    );
  }
  const stepUp = await ownStepUp(call, stepUpId);
  const state = stateOf(stepUp, call.now);
  if (state === StepUpState.PENDING) {
    throw new FailedPreconditionError(
      "stepUpId: the step-up has not been completed with a passkey yet; give it on the ceremony page",
      { reason: "STEP_UP_PENDING" },
    );
  }
  if (state === StepUpState.EXPIRED) {
    await auditRefusal(call, stepUp.id, "expired");
    throw new FailedPreconditionError("stepUpId: the step-up expired; begin a new one", {
      reason: "STEP_UP_EXPIRED",
    });
  }
  const listed = stepUp.targets.some((t) => t.targetId === target.targetId && t.login === target.login);
  if (!listed || isSigned(stepUp, target)) {
    await auditRefusal(call, stepUp.id, listed ? "already_signed" : "not_listed");
    throw new FailedPreconditionError(
      `stepUpId: the step-up ${listed ? "has already signed the certificate of" : "does not list"} login '${target.login}' on this target; begin a new one`,
      { reason: "STEP_UP_NOT_COVERED" },
    );
  }
  return { stepUp, target };
}

/**
 * Claims the login of `use` for the certificate `certificateId`: the first claim wins, a
 * concurrent one for the same login is refused as already signed.
 */
export async function claimStepUp(call: Call, use: StepUpUse, certificateId: string): Promise<void> {
  const claimed = await call.services.storage.sshStepUps.claimTarget(
    call.workspace.workspaceId,
    use.stepUp.id,
    use.target,
    certificateId,
  );
  if (claimed) return;
  await auditRefusal(call, use.stepUp.id, "already_signed");
  throw new FailedPreconditionError(
    `stepUpId: the step-up has already signed the certificate of login '${use.target.login}' on this target; begin a new one`,
    { reason: "STEP_UP_NOT_COVERED" },
  );
}

/**
 * The validity of a certificate signed under a step-up: {@link stepUpCertificateSeconds} in all,
 * starting a few seconds before signing (hosts whose clocks run a little behind).
 */
export function stepUpValidity(now: Date): SignOption<unknown, ValidityDraft> {
  return {
    kind: "enforcer",
    name: "step-up-validity",
    enforce(draft) {
      const start = Math.floor(now.getTime() / 1000) * 1000 - 5_000;
      const end = start + stepUpCertificateSeconds * 1000;
      draft.validAfter = new Date(Math.max(draft.validAfter.getTime(), start));
      if (draft.validBefore.getTime() > end) {
        draft.validBefore = new Date(end);
        draft.ttlNote = `a certificate signed under a step-up is valid ${stepUpCertificateSeconds}s`;
      }
    },
  };
}
