/**
 * The passkey step-up of SSH logins (CertificateService BeginSSHStepUp, GetSSHStepUp,
 * CompleteSSHStepUp); what SignSSHCertificate checks of it is in certificates/step-up.ts.
 *
 * A grant may require a step-up (`limits.requireStepUp`): each connection then needs a passkey,
 * given with user verification, on the console's ceremony page. One ceremony covers a list of
 * logins (a run across many hosts): once it is completed, its user may sign one certificate for
 * each login listed, within {@link signWindowSeconds}, each single-use, bound to its target and
 * valid 60 s in all. The ceremony is its user's alone: another
 * signed-in user hears `not_found` and the attempt is audited; the challenge is answered once;
 * a pending step-up expires after {@link pendingSeconds}.
 *
 * @module
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { CertificateService, type SSHStepUpSchema, StepUpState } from "@wap/api";
import * as z from "zod";
import { accountConfig, accountLink } from "../auth/account-config.js";
import { callerUser } from "../auth/caller-user.js";
import { chooseGrant, grantsOfLogin } from "../certificates/issuance/limits.js";
import { auditRefusal, type Call, isSigned, ownStepUp, stateOf } from "../certificates/step-up.js";
import {
  maxCredentialJsonLength,
  owned,
  readAuthentication,
  relyingParty,
  webauthn,
} from "../credentials/webauthn.js";
import { FailedPreconditionError, NotFoundError, PermissionDeniedError } from "../errors.js";
import { decodeBase64Url, encodeBase64Url } from "../lib/base64.js";
import { defineOperation } from "../operations/operation.js";
import type { SshStepUpWithUses } from "../storage/ssh-step-ups.js";
import { principalUsername } from "../validation/bounds.js";
import { text, uuid } from "../validation/rules.js";

/** How long the passkey may take to be given. */
const pendingSeconds = 300;
/** After the passkey, how long certificates may be asked for under the step-up. */
const signWindowSeconds = 300;
/** Logins one step-up covers at most (a run across many hosts). */
const maxStepUpTargets = 100;

// Not targets/messages.js: it would close an import cycle through the signing of certificates.
const targetNotFound = (id: string) =>
  new NotFoundError(`target ${id} not found`, { reason: "TARGET_NOT_FOUND" });
const targetsInput = z
  .array(z.object({ targetId: uuid, login: principalUsername }))
  .min(1, `must have 1 to ${maxStepUpTargets} items`)
  .max(maxStepUpTargets, `must have 1 to ${maxStepUpTargets} items`)
  .superRefine((targets, ctx) => {
    const seen = new Set<string>();
    targets.forEach((t, index) => {
      const key = `${t.targetId}/${t.login}`;
      if (seen.has(key))
        ctx.addIssue({
          code: "custom",
          path: [index],
          message: `'${t.login}' on ${t.targetId} is listed twice`,
        });
      seen.add(key);
    });
  });

async function toStepUpMessage(
  call: Call,
  stepUp: SshStepUpWithUses,
): Promise<MessageInitShape<typeof SSHStepUpSchema>> {
  const names = new Map<string, string>();
  for (const t of stepUp.targets) {
    if (names.has(t.targetId)) continue;
    const target = await call.services.storage.targets.findById(stepUp.workspaceId, t.targetId);
    names.set(t.targetId, target?.name ?? "");
  }
  return {
    id: stepUp.id,
    workspaceId: stepUp.workspaceId,
    userId: stepUp.userId,
    targets: stepUp.targets.map((t) => ({
      targetId: t.targetId,
      login: t.login,
      targetName: names.get(t.targetId) ?? "",
      signed: isSigned(stepUp, t),
    })),
    state: stateOf(stepUp, call.now),
    createdAt: timestampFromDate(stepUp.createdAt),
    expiresAt: timestampFromDate(stepUp.expiresAt),
    ...(stepUp.completedAt !== null && { completedAt: timestampFromDate(stepUp.completedAt) }),
    ceremonyUrl: accountLink(
      accountConfig(call.services),
      `/w/${stepUp.workspaceId}/step-up/${stepUp.id}`,
      {},
    ),
  };
}

/** The WebAuthn request options of a pending step-up: its challenge, the user's passkeys. */
async function requestOptions(call: Call, stepUp: SshStepUpWithUses): Promise<string> {
  const config = accountConfig(call.services);
  const passkeys = await call.services.storage.passkeys.listByUser(stepUp.userId);
  const options = await (await webauthn()).generateAuthenticationOptions({
    rpID: relyingParty(config).id,
    challenge: owned(decodeBase64Url(stepUp.challenge) ?? new Uint8Array()),
    timeout: Math.max(1, stepUp.expiresAt.getTime() - call.now.getTime()),
    userVerification: "required",
    allowCredentials: passkeys.map((p) => ({ id: p.id, transports: [...p.transports] })),
  });
  return JSON.stringify(options);
}

export const beginSshStepUp = defineOperation({
  method: CertificateService.method.beginSSHStepUp,
  access: { kind: "workspace", permission: "certificate_authorities.read", callers: ["user"] },
  input: z.object({ workspaceId: uuid.optional(), targets: targetsInput }),
  async run(call) {
    const { input, services, workspace, ctx, now } = call;
    const user = await callerUser(services, ctx);
    const storage = services.storage;
    for (const [index, t] of input.targets.entries()) {
      if (!(await storage.targets.findById(workspace.workspaceId, t.targetId)))
        throw targetNotFound(t.targetId);
      const grants = await grantsOfLogin(storage, {
        workspaceId: workspace.workspaceId,
        targetId: t.targetId,
        login: t.login,
        subject: { kind: "user", id: user.id },
        at: now,
      });
      if (grants.length === 0) {
        throw new PermissionDeniedError(
          `you hold no grant of login '${t.login}' on target ${t.targetId} now (targets[${index}])`,
          { reason: "NO_GRANT_OF_LOGIN" },
        );
      }
      if (chooseGrant(grants, undefined, ctx.ipAddress).limits?.requireStepUp !== true) {
        throw new FailedPreconditionError(
          `targets[${index}]: your grant of login '${t.login}' on target ${t.targetId} requires no step-up; sign its certificate without one`,
          { reason: "STEP_UP_NOT_REQUIRED" },
        );
      }
    }
    if ((await storage.passkeys.listByUser(user.id)).length === 0) {
      throw new FailedPreconditionError(
        "a step-up needs a passkey and you have none: add one on your account page first",
        { reason: "STEP_UP_NO_PASSKEY" },
      );
    }
    const stepUp: SshStepUpWithUses = {
      id: services.random.uuid(),
      workspaceId: workspace.workspaceId,
      userId: user.id,
      targets: input.targets,
      challenge: encodeBase64Url(services.random.bytes(32)),
      createdAt: now,
      expiresAt: new Date(now.getTime() + pendingSeconds * 1000),
      completedAt: null,
      passkeyId: null,
      signed: [],
    };
    await storage.transaction(async (tx) => {
      // The table holds only live step-ups and those of the last day (for GetSSHStepUp).
      await tx.sshStepUps.deleteExpired(new Date(now.getTime() - 86_400_000));
      await tx.sshStepUps.insert(stepUp);
      await call.audit(tx, {
        action: "ssh_step_up.begin",
        resource: `ssh_step_up:${stepUp.id} logins=${input.targets.length}`,
      });
    });
    return { stepUp: await toStepUpMessage(call, stepUp) };
  },
});

export const getSshStepUp = defineOperation({
  method: CertificateService.method.getSSHStepUp,
  access: { kind: "workspace", permission: "certificate_authorities.read", callers: ["user"] },
  input: z.object({ workspaceId: uuid.optional(), id: uuid }),
  async run(call) {
    const stepUp = await ownStepUp(call, call.input.id);
    const pending = stateOf(stepUp, call.now) === StepUpState.PENDING;
    return {
      stepUp: await toStepUpMessage(call, stepUp),
      ...(pending && { optionsJson: await requestOptions(call, stepUp) }),
    };
  },
});

export const completeSshStepUp = defineOperation({
  method: CertificateService.method.completeSSHStepUp,
  access: { kind: "workspace", permission: "certificate_authorities.read", callers: ["user"] },
  input: z.object({
    workspaceId: uuid.optional(),
    id: uuid,
    credentialJson: text({ min: 1, max: maxCredentialJsonLength, controlCharacters: "allowed" }),
  }),
  async run(call) {
    const { input, services, workspace, now } = call;
    const stepUp = await ownStepUp(call, input.id);
    const state = stateOf(stepUp, now);
    if (state === StepUpState.COMPLETED) {
      await auditRefusal(call, stepUp.id, "completed");
      throw new FailedPreconditionError("this step-up was already completed; begin a new one", {
        reason: "STEP_UP_COMPLETED",
      });
    }
    if (state === StepUpState.EXPIRED) {
      await auditRefusal(call, stepUp.id, "expired");
      throw new FailedPreconditionError(
        "this step-up expired before the passkey was given; begin a new one",
        {
          reason: "STEP_UP_EXPIRED",
        },
      );
    }
    const refused = async () => {
      await auditRefusal(call, stepUp.id, "invalid_assertion");
      return new PermissionDeniedError(
        "the passkey did not confirm this step-up: use a passkey of your own account, with its PIN or biometrics",
        { reason: "INVALID_STEP_UP_ASSERTION" },
      );
    };
    const read = readAuthentication(input.credentialJson);
    if (read === null || read.challenge !== stepUp.challenge) throw await refused();
    const passkey = await services.storage.passkeys.findById(read.response.id);
    if (!passkey || passkey.userId !== stepUp.userId) throw await refused();
    const rp = relyingParty(accountConfig(services));
    const verified = await (await webauthn())
      .verifyAuthenticationResponse({
        response: read.response,
        expectedChallenge: stepUp.challenge,
        expectedOrigin: rp.origin,
        expectedRPID: rp.id,
        credential: { id: passkey.id, publicKey: owned(passkey.publicKey), counter: passkey.counter },
        requireUserVerification: true,
      })
      .catch(() => null);
    if (!verified?.verified) throw await refused();
    const signUntil = new Date(now.getTime() + signWindowSeconds * 1000);
    const completed = await services.storage.transaction(async (tx) => {
      // One answer per challenge: a second (or concurrent) assertion finds it completed.
      if (!(await tx.sshStepUps.complete(workspace.workspaceId, stepUp.id, passkey.id, now, signUntil)))
        return false;
      await tx.passkeys.recordUse(passkey.id, verified.authenticationInfo.newCounter, now);
      await call.audit(tx, {
        action: "ssh_step_up.complete",
        resource: `ssh_step_up:${stepUp.id} passkey=${passkey.id}`,
      });
      return true;
    });
    if (!completed) {
      await auditRefusal(call, stepUp.id, "completed");
      throw new FailedPreconditionError("this step-up was already completed; begin a new one", {
        reason: "STEP_UP_COMPLETED",
      });
    }
    return { stepUp: await toStepUpMessage(call, await ownStepUp(call, stepUp.id)) };
  },
});

export const stepUpOperations = [beginSshStepUp, getSshStepUp, completeSshStepUp];
