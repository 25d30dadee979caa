/**
 * Grant kinds: standing grants let their subject in until removed, time-bound grants until their
 * end (then a sweep removes them, audited), on-request grants not by themselves; their terms are
 * checked (each kind with its own field, bounds on the approval policy) and shown on the principal.
 */
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { GrantKind, PrincipalService, PrincipalType, TargetService, TeamService } from "@wap/api";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { removeLapsedGrants } from "../src/access-requests/lapsed-grants.js";
import { principalMapOf } from "../src/daemons/sync.js";
import { memberWithRole, type Owner, type Person, sshAuthority } from "./support/access.js";
import { createTestPlatform, expectCode, type TestPlatform } from "./support.js";

let t: TestPlatform;
let ada: Owner;
let bob: Person;
let targetId = "";
let principalId = "";
beforeEach(async () => {
  t = await createTestPlatform();
  ada = await t.owner();
  bob = await memberWithRole(t, ada.workspaceId, "viewer");
  await sshAuthority(t, ada);
  targetId = (
    await t.call(ada.caller, TargetService.method.createTarget, {
      workspaceId: ada.workspaceId,
      name: "db-1",
    })
  ).target!.id;
  await t.call(ada.caller, PrincipalService.method.setPrincipals, {
    workspaceId: ada.workspaceId,
    targetId,
    usernames: ["ubuntu"],
  });
  principalId = (await t.storage.principals.listByTargets(ada.workspaceId, [targetId]))[0]!.id;
});
afterEach(() => t.platform.close());

const grant = (terms: Record<string, unknown> = {}, subjectIds = [bob.caller.userId]) =>
  t.call(ada.caller, PrincipalService.method.addSubjectsToPrincipal, {
    workspaceId: ada.workspaceId,
    id: principalId,
    subjectIds,
    type: PrincipalType.USER,
    ...terms,
  });
const logins = async () =>
  (await principalMapOf(t.storage, ada.workspaceId, targetId, t.clock.now())).get("ubuntu") ?? [];
const grants = async () => {
  const { principals } = await t.call(ada.caller, PrincipalService.method.listPrincipals, {
    workspaceId: ada.workspaceId,
    targetId,
  });
  return principals[0]!.grants;
};
const inOneHour = () => timestampFromDate(new Date(t.clock.now().getTime() + 3_600_000));
const policy = (extra: Record<string, unknown> = {}) => ({
  maxDuration: { seconds: 3600n, nanos: 0 },
  approverRoles: ["admin"],
  ...extra,
});

describe("grant kinds", () => {
  it("a grant without a kind is standing and lets its subject in", async () => {
    await grant();
    expect(await logins()).toEqual([bob.caller.userId]);
    expect(await grants()).toMatchObject([{ subjectId: bob.caller.userId, kind: GrantKind.STANDING }]);
  });

  it("a time-bound grant lets its subject in until its end, then the sweep removes it, audited", async () => {
    const end = inOneHour();
    await grant({ kind: GrantKind.TIME_BOUND, validUntil: end });
    expect(await grants()).toMatchObject([{ kind: GrantKind.TIME_BOUND, validUntil: end }]);
    t.clock.advance(3_600_000 - 1);
    expect(await logins()).toEqual([bob.caller.userId]);
    expect(await removeLapsedGrants(t.platform.services)).toBe(0);
    t.clock.advance(1);
    expect(await logins()).toEqual([]);
    expect(await removeLapsedGrants(t.platform.services)).toBe(1);
    expect(await grants()).toEqual([]);
    const audit = await t.storage.auditEvents.list(ada.workspaceId, { limit: 100, offset: 0 });
    expect(audit.items.find((e) => e.actorType === "system")).toMatchObject({
      action: "principal.revoke",
      resource: `principal:${principalId}`,
    });
  });

  it("an on-request grant lets no one in by itself and shows its approval policy", async () => {
    const team = (
      await t.call(ada.caller, TeamService.method.createTeam, {
        workspaceId: ada.workspaceId,
        name: "oncall",
      })
    ).team!;
    await grant({
      kind: GrantKind.ON_REQUEST,
      approval: policy({ approverTeamIds: [team.id], approvalsRequired: 2, reasonRequired: true }),
    });
    expect(await logins()).toEqual([]);
    expect(await grants()).toMatchObject([
      {
        kind: GrantKind.ON_REQUEST,
        approval: {
          maxDuration: { seconds: 3600n },
          approverRoles: ["admin"],
          approverTeamIds: [team.id],
          approvalsRequired: 2,
          reasonRequired: true,
        },
      },
    ]);
  });

  it("adding a granted subject again replaces the grant's terms and keeps its creation time", async () => {
    await grant({ kind: GrantKind.ON_REQUEST, approval: policy() });
    const [before] = await grants();
    t.clock.advance(60_000);
    await grant();
    expect(await grants()).toMatchObject([{ kind: GrantKind.STANDING, createdAt: before!.createdAt }]);
    expect(await logins()).toEqual([bob.caller.userId]);
  });

  it("refuses terms that do not fit the kind, naming the field, and changes nothing", async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ kind: GrantKind.TIME_BOUND }, "validUntil"],
      [{ kind: GrantKind.TIME_BOUND, validUntil: timestampFromDate(t.clock.now()) }, "validUntil"],
      [{ validUntil: inOneHour() }, "validUntil"],
      [{ kind: GrantKind.ON_REQUEST }, "approval"],
      [{ kind: GrantKind.TIME_BOUND, validUntil: inOneHour(), approval: policy() }, "approval"],
      [{ kind: GrantKind.ON_REQUEST, approval: policy({ approverRoles: [] }) }, "approval.approverRoles"],
      [
        { kind: GrantKind.ON_REQUEST, approval: policy({ approverRoles: ["root"] }) },
        "approval.approverRoles.0",
      ],
      [
        { kind: GrantKind.ON_REQUEST, approval: policy({ approverRoles: ["admin", "admin"] }) },
        "approval.approverRoles.1",
      ],
      [{ kind: GrantKind.ON_REQUEST, approval: { approverRoles: ["admin"] } }, "approval.maxDuration"],
      [{ kind: 9 }, "kind"],
    ];
    for (const [terms, field] of cases) {
      const error = await expectCode(grant(terms), "invalid_argument");
      expect(
        error.violations.map((v) => v.field),
        JSON.stringify(terms, (_, v) => (typeof v === "bigint" ? `${v}` : v)),
      ).toEqual([field]);
    }
    expect(await grants()).toEqual([]);
  });

  it("refuses an approver team of another workspace as not found", async () => {
    const other = await t.owner();
    const team = (
      await t.call(other.caller, TeamService.method.createTeam, {
        workspaceId: other.workspaceId,
        name: "theirs",
      })
    ).team!;
    const error = await expectCode(
      grant({ kind: GrantKind.ON_REQUEST, approval: policy({ approverTeamIds: [team.id] }) }),
      "not_found",
    );
    expect(error.reason).toBe("TEAM_NOT_FOUND");
    expect(await grants()).toEqual([]);
  });

  it("accepts 1 to 10 approvals and a maximum duration of 60 s to 7 days, on both sides of each bound", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: -5, max: 20 }),
        fc.integer({ min: 0, max: 700_000 }),
        async (approvals, seconds) => {
          const approval = policy({
            approvalsRequired: approvals,
            maxDuration: { seconds: BigInt(seconds), nanos: 0 },
          });
          const call = grant({ kind: GrantKind.ON_REQUEST, approval });
          const approvalsOk = approvals >= 1 && approvals <= 10;
          const durationOk = seconds >= 60 && seconds <= 604_800;
          if (approvalsOk && durationOk) {
            await call;
            expect((await grants())[0]?.approval?.approvalsRequired).toBe(approvals);
            return;
          }
          const error = await expectCode(call, "invalid_argument");
          const fields = error.violations.map((v) => v.field).sort();
          expect(fields).toEqual(
            [
              ...(approvalsOk ? [] : ["approval.approvalsRequired"]),
              ...(durationOk ? [] : ["approval.maxDuration"]),
            ].sort(),
          );
        },
      ),
      {
        numRuns: 60,
        examples: [
          [0, 60],
          [1, 59],
          [10, 604_800],
          [11, 604_801],
          [1, 60],
        ],
      },
    );
  });
});
