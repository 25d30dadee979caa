/**
 * Passkey step-up of SSH logins over real storage: a grant requiring one signs nothing without a
 * completed ceremony (failed_precondition naming the step-up, audited); one ceremony of its user,
 * with a verified passkey, covers many logins: one single-use, host-bound certificate each,
 * valid 60 s, recorded in the ledger with the step-up; the challenge is answered once; another
 * user (or workspace) cannot see, complete or use it; service accounts cannot be given such a
 * grant and otherwise get the same limits.
 */
import {
  CertificateService,
  SignSSHCertificateRequest_CertificateType as CertType,
  CredentialService,
  PrincipalService,
  PrincipalType,
  StepUpState,
} from "@wap/api";
import { readSshCertificate } from "@wap/ssh-wire";
import { SINGLE_USE_EXTENSION, TARGET_EXTENSION } from "@wap/ssh-wire/extensions";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Caller } from "../src/context.js";
import { grantPrincipal } from "../src/principals/grant-limits.js";
import { memberWithRole, type Person, serviceAccountCaller } from "./support/access.js";
import { createAccountsPlatform, publicBaseUrl } from "./support/accounts.js";
import { createSoftwareAuthenticator } from "./support/authenticator.js";
import { createAuthority, insertTarget, type Owner, subjectKey } from "./support/certificates.js";
import { expectCode, type TestPlatform } from "./support.js";

let t: TestPlatform & Awaited<ReturnType<typeof createAccountsPlatform>>;
let ada: Owner;
let bob: Person;
let eve: Person;
let caId = "";
const targets: string[] = [];
const principalIds = new Map<string, string>();
let bobKey: ReturnType<typeof createSoftwareAuthenticator>;
let eveKey: ReturnType<typeof createSoftwareAuthenticator>;
let publicKey = "";
const login = "deploy";

async function registerPasskey(
  caller: Caller,
  authenticator: ReturnType<typeof createSoftwareAuthenticator>,
) {
  const { optionsJson } = await t.call(caller, CredentialService.method.beginPasskeyRegistration, {});
  await t.call(caller, CredentialService.method.finishPasskeyRegistration, {
    credentialJson: authenticator.create(optionsJson),
  });
}

const grant = (
  targetId: string,
  limits: Record<string, unknown> | undefined,
  subjectId = bob.caller.userId,
) =>
  t.call(ada.caller, PrincipalService.method.addSubjectsToPrincipal, {
    workspaceId: ada.workspaceId,
    id: principalIds.get(targetId)!,
    subjectIds: [subjectId],
    type: PrincipalType.USER,
    ...(limits && { limits }),
  });

beforeAll(async () => {
  t = (await createAccountsPlatform()) as typeof t;
  ada = await t.owner();
  bob = await memberWithRole(t, ada.workspaceId, "viewer");
  eve = await memberWithRole(t, ada.workspaceId, "viewer");
  caId = (await createAuthority(t, ada, { type: "ed25519" })).id;
  for (let i = 0; i < 4; i++) {
    const targetId = (await insertTarget(t, ada.workspaceId, caId, { name: `web-${i}` })).id;
    targets.push(targetId);
    await t.call(ada.caller, PrincipalService.method.setPrincipals, {
      workspaceId: ada.workspaceId,
      targetId,
      usernames: [login],
    });
    principalIds.set(
      targetId,
      (await t.storage.principals.listByTargets(ada.workspaceId, [targetId]))[0]!.id,
    );
  }
  // Bob's grants of deploy on web-0..2 require a step-up; web-3 does not.
  for (const targetId of targets.slice(0, 3)) await grant(targetId, { permitPty: true, requireStepUp: true });
  await grant(targets[3]!, { permitPty: true });
  await grant(targets[0]!, { permitPty: true, requireStepUp: true }, eve.caller.userId);
  bobKey = createSoftwareAuthenticator({ origin: publicBaseUrl });
  eveKey = createSoftwareAuthenticator({ origin: publicBaseUrl });
  await registerPasskey(bob.caller, bobKey);
  await registerPasskey(eve.caller, eveKey);
  publicKey = (await subjectKey({ type: "ed25519" }, "bob@laptop")).line;
});

afterAll(() => t?.platform.close());

const sign = (caller: Caller, targetId: string, extra: Record<string, unknown> = {}) =>
  t.call(caller, CertificateService.method.signSSHCertificate, {
    workspaceId: ada.workspaceId,
    caId,
    targetId,
    type: CertType.USER,
    publicKey,
    login,
    ...extra,
  });

const begin = (caller: Caller, targetIds: readonly string[], workspaceId = ada.workspaceId) =>
  t.call(caller, CertificateService.method.beginSSHStepUp, {
    workspaceId,
    targets: targetIds.map((targetId) => ({ targetId, login })),
  });

/** What the ceremony page does: fetch the options, answer them with the authenticator. */
async function complete(
  caller: Caller,
  id: string,
  authenticator = bobKey,
  optionsFrom: Caller = caller,
): Promise<unknown> {
  const { optionsJson } = await t.call(optionsFrom, CertificateService.method.getSSHStepUp, {
    workspaceId: ada.workspaceId,
    id,
  });
  return t.call(caller, CertificateService.method.completeSSHStepUp, {
    workspaceId: ada.workspaceId,
    id,
    credentialJson: authenticator.get(optionsJson!),
  });
}

async function auditActions(prefix: string) {
  const { items } = await t.storage.auditEvents.list(ada.workspaceId, { limit: 500, offset: 0 });
  return items.filter((e) => e.action.startsWith(prefix)).map((e) => `${e.action} ${e.resource}`);
}

describe("a grant requiring a step-up", () => {
  it("signs nothing without a ceremony: failed_precondition naming the step-up, audited", async () => {
    const error = await expectCode(sign(bob.caller, targets[0]!), "failed_precondition");
    expect(error.reason).toBe("STEP_UP_REQUIRED");
    expect(error.message).toMatch(/requires a passkey step-up .*stepUpId/);
    expect(await auditActions("ssh_step_up.refuse")).toContainEqual(
      expect.stringContaining(`target:${targets[0]} login=${login} reason=no_step_up`),
    );
    // The grant's principal differs from the subject's: an ordinary certificate opens nothing there.
    const plain = await t.call(bob.caller, CertificateService.method.signSSHCertificate, {
      workspaceId: ada.workspaceId,
      caId,
      type: CertType.USER,
      publicKey,
    });
    expect(readSshCertificate(plain.signedCertificate).principals).toEqual([bob.caller.userId]);
  });

  it("one ceremony covers many logins: one single-use host-bound certificate each, valid 60 s", async () => {
    const { stepUp } = await begin(bob.caller, targets.slice(0, 3));
    expect(stepUp).toMatchObject({ state: StepUpState.PENDING, userId: bob.caller.userId });
    expect(stepUp!.ceremonyUrl).toBe(`${publicBaseUrl}/w/${ada.workspaceId}/step-up/${stepUp!.id}`);
    expect(stepUp!.targets.map((x) => x.targetName)).toEqual(["web-0", "web-1", "web-2"]);
    // Pending: no certificate yet.
    const pending = await expectCode(
      sign(bob.caller, targets[0]!, { stepUpId: stepUp!.id }),
      "failed_precondition",
    );
    expect(pending.reason).toBe("STEP_UP_PENDING");

    const options = JSON.parse(
      (
        await t.call(bob.caller, CertificateService.method.getSSHStepUp, {
          workspaceId: ada.workspaceId,
          id: stepUp!.id,
        })
      ).optionsJson!,
    );
    expect(options).toMatchObject({ userVerification: "required", rpId: "app.example.test" });
    expect(options.allowCredentials).toHaveLength(1);
    const done = (await complete(bob.caller, stepUp!.id)) as { stepUp: { state: StepUpState } };
    expect(done.stepUp.state).toBe(StepUpState.COMPLETED);

    const signedAt = t.clock.now().getTime();
    for (const targetId of targets.slice(0, 3)) {
      const res = await sign(bob.caller, targetId, { stepUpId: stepUp!.id, ttl: { seconds: 3600n } });
      const cert = readSshCertificate(res.signedCertificate);
      expect(cert.principals).toEqual([
        grantPrincipal(bob.caller.userId, {
          pinClientAddress: false,
          sourceCidrs: [],
          permitPortForwarding: false,
          permitAgentForwarding: false,
          permitX11Forwarding: false,
          permitPty: true,
          verifyRequired: false,
          skKeysOnly: false,
          commands: [],
          requireStepUp: true,
        }),
      ]);
      expect(cert.extensions[TARGET_EXTENSION]).toBe(targetId);
      expect(SINGLE_USE_EXTENSION in cert.extensions).toBe(true);
      expect(cert.validBefore.getTime() - cert.validAfter.getTime()).toBe(60_000);
      expect(cert.validBefore.getTime()).toBeLessThanOrEqual(signedAt + 60_000);
    }
    // Each login once.
    const again = await expectCode(
      sign(bob.caller, targets[1]!, { stepUpId: stepUp!.id }),
      "failed_precondition",
    );
    expect(again.reason).toBe("STEP_UP_NOT_COVERED");
    const { certificates } = await t.call(ada.caller, CertificateService.method.listIssuedCertificates, {
      workspaceId: ada.workspaceId,
      subjectId: bob.caller.userId,
      limit: 100,
    });
    const underStepUp = certificates.filter((c) => c.stepUpId === stepUp!.id);
    expect(underStepUp.map((c) => c.targetId).sort()).toEqual(targets.slice(0, 3).sort());
    expect(underStepUp.every((c) => c.singleUse && c.limits?.requireStepUp)).toBe(true);
    const got = await t.call(bob.caller, CertificateService.method.getSSHStepUp, {
      workspaceId: ada.workspaceId,
      id: stepUp!.id,
    });
    expect(got.stepUp!.targets.every((x) => x.signed)).toBe(true);
    expect(got.optionsJson ?? "").toBe("");
    const audited = await auditActions("ssh_step_up.");
    expect(audited).toContainEqual(`ssh_step_up.begin ssh_step_up:${stepUp!.id} logins=3`);
    expect(audited).toContainEqual(
      expect.stringMatching(new RegExp(`^ssh_step_up.complete ssh_step_up:${stepUp!.id} passkey=`)),
    );
  });

  it("a login the step-up does not list is refused", async () => {
    const { stepUp } = await begin(bob.caller, [targets[0]!]);
    await complete(bob.caller, stepUp!.id);
    const error = await expectCode(
      sign(bob.caller, targets[1]!, { stepUpId: stepUp!.id }),
      "failed_precondition",
    );
    expect(error.reason).toBe("STEP_UP_NOT_COVERED");
  });

  it("answers the challenge once, and not after it expired", async () => {
    const { stepUp } = await begin(bob.caller, [targets[0]!]);
    const { optionsJson } = await t.call(bob.caller, CertificateService.method.getSSHStepUp, {
      workspaceId: ada.workspaceId,
      id: stepUp!.id,
    });
    const first = bobKey.get(optionsJson!);
    await t.call(bob.caller, CertificateService.method.completeSSHStepUp, {
      workspaceId: ada.workspaceId,
      id: stepUp!.id,
      credentialJson: first,
    });
    const replay = await expectCode(
      t.call(bob.caller, CertificateService.method.completeSSHStepUp, {
        workspaceId: ada.workspaceId,
        id: stepUp!.id,
        credentialJson: bobKey.get(optionsJson!),
      }),
      "failed_precondition",
    );
    expect(replay.reason).toBe("STEP_UP_COMPLETED");

    const late = await begin(bob.caller, [targets[0]!]);
    const lateOptions = (
      await t.call(bob.caller, CertificateService.method.getSSHStepUp, {
        workspaceId: ada.workspaceId,
        id: late.stepUp!.id,
      })
    ).optionsJson!;
    t.clock.advance(301_000);
    const expired = await expectCode(
      t.call(bob.caller, CertificateService.method.completeSSHStepUp, {
        workspaceId: ada.workspaceId,
        id: late.stepUp!.id,
        credentialJson: bobKey.get(lateOptions),
      }),
      "failed_precondition",
    );
    expect(expired.reason).toBe("STEP_UP_EXPIRED");
    // Certificates are asked for within five minutes of the passkey.
    const slow = await begin(bob.caller, [targets[0]!]);
    await complete(bob.caller, slow.stepUp!.id);
    t.clock.advance(301_000);
    const window = await expectCode(
      sign(bob.caller, targets[0]!, { stepUpId: slow.stepUp!.id }),
      "failed_precondition",
    );
    expect(window.reason).toBe("STEP_UP_EXPIRED");
  });

  it("is its user's alone: another user cannot see, complete or sign under it, and is audited", async () => {
    const { stepUp } = await begin(bob.caller, [targets[0]!]);
    const id = stepUp!.id;
    await expectCode(
      t.call(eve.caller, CertificateService.method.getSSHStepUp, { workspaceId: ada.workspaceId, id }),
      "not_found",
    );
    // Eve answers Bob's options with her own passkey: not found, nothing completed.
    await expectCode(complete(eve.caller, id, eveKey, bob.caller), "not_found");
    expect(await auditActions("ssh_step_up.refuse")).toContainEqual(
      `ssh_step_up.refuse ssh_step_up:${id} reason=other_user`,
    );
    // Bob answering with Eve's passkey is refused too.
    const foreign = await expectCode(complete(bob.caller, id, eveKey, bob.caller), "permission_denied");
    expect(foreign.reason).toBe("INVALID_STEP_UP_ASSERTION");
    await complete(bob.caller, id);
    await expectCode(sign(eve.caller, targets[0]!, { stepUpId: id }), "not_found");
  });

  it("refuses an assertion without user verification", async () => {
    const { stepUp } = await begin(bob.caller, [targets[0]!]);
    const { optionsJson } = await t.call(bob.caller, CertificateService.method.getSSHStepUp, {
      workspaceId: ada.workspaceId,
      id: stepUp!.id,
    });
    const unverified = createSoftwareAuthenticator({ origin: publicBaseUrl, userVerified: false });
    unverified.credentials.push(...bobKey.credentials);
    const error = await expectCode(
      t.call(bob.caller, CertificateService.method.completeSSHStepUp, {
        workspaceId: ada.workspaceId,
        id: stepUp!.id,
        credentialJson: unverified.get(optionsJson!),
      }),
      "permission_denied",
    );
    expect(error.reason).toBe("INVALID_STEP_UP_ASSERTION");
  });

  it("is not found in another workspace, even by its user", async () => {
    const other = await t.owner();
    const { stepUp } = await begin(bob.caller, [targets[0]!]);
    await expectCode(
      t.call(other.caller, CertificateService.method.getSSHStepUp, {
        workspaceId: other.workspaceId,
        id: stepUp!.id,
      }),
      "not_found",
    );
    // Bob is no member there: the workspace itself is not found.
    await expectCode(begin(bob.caller, [targets[0]!], other.workspaceId), "not_found");
    // A target of another workspace is not found.
    const foreignTarget = (
      await insertTarget(t, other.workspaceId, (await createAuthority(t, other, { type: "ed25519" })).id)
    ).id;
    await expectCode(begin(bob.caller, [foreignTarget]), "not_found");
  });
});

describe("beginning a step-up", () => {
  it("refuses bad input naming the field, and logins that need none", async () => {
    const empty = await expectCode(begin(bob.caller, []), "invalid_argument");
    expect(empty.message).toMatch(/targets/);
    const twice = await expectCode(begin(bob.caller, [targets[0]!, targets[0]!]), "invalid_argument");
    expect(twice.message).toMatch(/targets\.1.*listed twice/);
    const notNeeded = await expectCode(begin(bob.caller, [targets[3]!]), "failed_precondition");
    expect(notNeeded.reason).toBe("STEP_UP_NOT_REQUIRED");
    expect(notNeeded.message).toMatch(/targets\[0\]/);
    const carol = await memberWithRole(t, ada.workspaceId, "viewer");
    await expectCode(begin(carol.caller, [targets[0]!]), "permission_denied");
    // A stepUpId where none is needed.
    const stray = await expectCode(
      sign(bob.caller, targets[3]!, { stepUpId: crypto.randomUUID() }),
      "failed_precondition",
    );
    expect(stray.reason).toBe("STEP_UP_NOT_REQUIRED");
  });

  it("a user without a passkey is told to add one", async () => {
    const dan = await memberWithRole(t, ada.workspaceId, "viewer");
    await grant(targets[0]!, { requireStepUp: true }, dan.caller.userId);
    const error = await expectCode(begin(dan.caller, [targets[0]!]), "failed_precondition");
    expect(error.reason).toBe("STEP_UP_NO_PASSKEY");
  });

  it("takes 1 to 100 logins (property)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 130 }), async (n) => {
        // Logins that do not exist on the target: past validation they are permission_denied.
        const call = t.call(bob.caller, CertificateService.method.beginSSHStepUp, {
          workspaceId: ada.workspaceId,
          targets: Array.from({ length: n }, (_, i) => ({ targetId: targets[0]!, login: `u${i}` })),
        });
        await expectCode(call, n >= 1 && n <= 100 ? "permission_denied" : "invalid_argument");
      }),
      { numRuns: 25 },
    );
  });
});

describe("service accounts", () => {
  it("cannot be given a grant requiring a step-up; they get the other limits", async () => {
    const sa = await serviceAccountCaller(t, ada, "viewer");
    const error = await expectCode(
      t.call(ada.caller, PrincipalService.method.addSubjectsToPrincipal, {
        workspaceId: ada.workspaceId,
        id: principalIds.get(targets[3]!)!,
        subjectIds: [sa.serviceAccountId],
        type: PrincipalType.SERVICE_ACCOUNT,
        limits: { permitPty: true, requireStepUp: true },
      }),
      "invalid_argument",
    );
    expect(error.reason).toBe("STEP_UP_NOT_FOR_SERVICE_ACCOUNTS");
    expect(error.message).toMatch(/limits\.requireStepUp/);
    const [principal] = await t.storage.principals.listByTargets(ada.workspaceId, [targets[3]!]);
    expect(principal?.serviceAccountIds ?? []).not.toContain(sa.serviceAccountId);
    await t.call(ada.caller, PrincipalService.method.addSubjectsToPrincipal, {
      workspaceId: ada.workspaceId,
      id: principalIds.get(targets[3]!)!,
      subjectIds: [sa.serviceAccountId],
      type: PrincipalType.SERVICE_ACCOUNT,
      limits: { permitPty: true, sourceCidrs: ["10.0.0.0/8"] },
    });
    const res = await sign(sa, targets[3]!);
    expect(readSshCertificate(res.signedCertificate).criticalOptions["source-address"]).toBe("10.0.0.0/8");
    // A service account cannot begin a step-up at all.
    await expectCode(begin(sa, [targets[3]!]), "permission_denied");
  });
});
