/**
 * Every rule of the contract on the workspace-access messages, through the
 * operations, on both sides of each bound (lengths count code points: astral characters are one
 * each). A request that passes validation may still fail for another reason (not_found, ...):
 * only validation errors name fields.
 */
import type { DescMessage, DescMethodUnary } from "@bufbuild/protobuf";
import {
  InvitationService,
  PrincipalService,
  PrincipalType,
  TargetService,
  TeamService,
  WorkspaceDomainService,
  WorkspaceService,
} from "@wap/api";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Caller } from "../src/context.js";
import { type Owner, sshAuthority } from "./support/access.js";
import { expectLengthRule, type LengthRule, violatedFieldsOf } from "./support/bounds.js";
import { createTestPlatform, type TestPlatform } from "./support.js";

let t: TestPlatform;
let ada: Owner;
let user: Caller;
let ws = "";
let targetId = "";
beforeAll(async () => {
  t = await createTestPlatform();
  ada = await t.owner();
  user = ada.caller;
  ws = ada.workspaceId;
  await sshAuthority(t, ada);
  targetId = (await t.call(user, TargetService.method.createTarget, { workspaceId: ws, name: "prop-target" }))
    .target!.id;
});
afterAll(() => t.platform.close());

const anonymous: Caller = { kind: "anonymous" };
const uuid = () => crypto.randomUUID();

const violatedFields = violatedFieldsOf(() => t);

const nameChars = fc.constantFrom("a", "Z", "7", "-", "_");
const usernameChars = fc.constantFrom("a", "z", "0", "_", "-");
/** Target names must start with a letter or digit: the first character is replaced. */
const leadingLetter = (value: string) => (value === "" ? "" : `a${value.slice(1)}`);

const rules: LengthRule[] = [
  ...(["createTeam", "updateTeam"] as const).flatMap((m): LengthRule[] => [
    {
      name: `${m}.name 1-256`,
      caller: () => user,
      method: TeamService.method[m],
      field: "name",
      min: 1,
      max: 256,
      request: (v) => ({ workspaceId: ws, id: uuid(), name: v }),
    },
    {
      name: `${m}.description <= 1000`,
      caller: () => user,
      method: TeamService.method[m],
      field: "description",
      min: 0,
      max: 1000,
      request: (v) => ({ workspaceId: ws, id: uuid(), name: `team-${uuid()}`, description: v }),
    },
  ]),
  ...(["createTarget", "updateTarget"] as const).flatMap((m): LengthRule[] => [
    {
      name: `${m}.name 1-256 with the pattern`,
      caller: () => user,
      method: TargetService.method[m],
      field: "name",
      min: 1,
      max: 256,
      chars: nameChars,
      request: (v) => ({ workspaceId: ws, id: uuid(), name: leadingLetter(v) }),
    },
    {
      name: `${m}.description <= 1000`,
      caller: () => user,
      method: TargetService.method[m],
      field: "description",
      min: 0,
      max: 1000,
      request: (v) => ({ workspaceId: ws, id: uuid(), name: `t-${uuid()}`, description: v }),
    },
  ]),
  {
    name: "SetPrincipals.usernames[] 1-32 with the pattern",
    caller: () => user,
    method: PrincipalService.method.setPrincipals,
    field: "usernames.0",
    min: 1,
    max: 32,
    chars: usernameChars,
    request: (v) => ({ workspaceId: ws, targetId, usernames: [v === "" ? "" : `u${v.slice(1)}`] }),
  },
  {
    name: "GetInvitation.token >= 1",
    caller: () => anonymous,
    method: InvitationService.method.getInvitation,
    field: "token",
    min: 1,
    request: (v) => ({ token: v }),
  },
  {
    name: "AcceptInvitation.token >= 1",
    caller: () => user,
    method: InvitationService.method.acceptInvitation,
    field: "token",
    min: 1,
    request: (v) => ({ token: v }),
  },
];

describe("length rules, both sides of each bound", () => {
  for (const rule of rules) {
    it(rule.name, () => expectLengthRule(violatedFields, rule));
  }
});

describe("patterns", () => {
  it("target names: a leading '-' or '_' or any other character is refused", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom("-", "_", ".", " ", "é", "/", "😀"),
        fc.boolean(),
        async (bad, leading) => {
          const name = leading ? `${bad}web` : `web${bad === "-" || bad === "_" ? "." : bad}`;
          expect(
            await violatedFields(user, TargetService.method.createTarget, { workspaceId: ws, name }),
          ).toContain("name");
        },
      ),
    );
  });

  it("principal usernames: [a-z_][a-z0-9_-]* with an optional final '$'", async () => {
    const valid = fc
      .tuple(
        fc.constantFrom(..."abcxyz_"),
        fc.array(fc.constantFrom(..."az09_-"), { maxLength: 30 }),
        fc.boolean(),
      )
      .map(([first, rest, dollar]) => `${first}${rest.join("")}${dollar ? "$" : ""}`);
    await fc.assert(
      fc.asyncProperty(valid, async (name) => {
        const fields = await violatedFields(user, PrincipalService.method.setPrincipals, {
          workspaceId: ws,
          targetId,
          usernames: [name],
        });
        expect(fields).toEqual([]);
      }),
      { numRuns: 40 },
    );
    for (const bad of ["Root", "0day", "-x", "a$b", "a$$", "a b", "é", "$"]) {
      expect(
        await violatedFields(user, PrincipalService.method.setPrincipals, {
          workspaceId: ws,
          targetId,
          usernames: [bad],
        }),
      ).toContain("usernames.0");
    }
  });

  it("workspace domains: a lower-case domain of 4 to 253 characters", async () => {
    // Labels of at most 63 characters, so the hostname rule holds at every length.
    const domainOf = (length: number) => {
      const labels: string[] = [];
      let left = length - 4; // ".com"
      while (left > 0) {
        const size = Math.min(63, left);
        labels.push("a".repeat(size));
        left -= size + 1;
        if (left === 0) {
          labels[labels.length - 1] = labels[labels.length - 1]!.slice(1);
          left = 0;
        }
      }
      const built = `${labels.join(".")}.com`;
      return built.length === length ? built : `${built.slice(0, length - 4).replace(/\.$/, "a")}.com`;
    };
    const create = (domain: string) =>
      violatedFields(user, WorkspaceDomainService.method.createWorkspaceDomain, { workspaceId: ws, domain });
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 5, max: 253 }), async (length) => {
        const domain = domainOf(length);
        expect(domain.length).toBe(length);
        expect(await create(domain)).not.toContain("domain");
      }),
      { numRuns: 30 },
    );
    expect(await create("a.io")).not.toContain("domain");
    expect(await create("a.b")).toContain("domain");
    expect(await create(`a${domainOf(253)}`)).toContain("domain");
    for (const bad of [
      "Example.com",
      "example",
      "exa_mple.com",
      "-a.com",
      "a-.com",
      "a..com",
      "a.c0m",
      "a.com.",
    ]) {
      expect(await create(bad)).toContain("domain");
    }
  });

  it("domain lookups take any hostname; other strings are refused", async () => {
    const get = (domain: string) =>
      violatedFields(user, WorkspaceDomainService.method.getWorkspaceDomain, { workspaceId: ws, domain });
    for (const ok of ["Example.COM", "example.com.", "a-b.example", "localhost", "x".repeat(63)]) {
      expect(await get(ok)).not.toContain("domain");
    }
    for (const bad of [
      "",
      "-a.com",
      "a_b.com",
      "a..com",
      "example.123",
      `${"x".repeat(64)}.com`,
      `${"a.".repeat(127)}aa`,
    ]) {
      expect(await get(bad)).toContain("domain");
    }
  });
});

describe("ids, enums, counts, durations and paging", () => {
  const idRules: Array<
    [string, DescMethodUnary<DescMessage, DescMessage>, string, (id: string) => Record<string, unknown>]
  > = [
    [
      "GetWorkspaceMember.userId",
      WorkspaceService.method.getWorkspaceMember as never,
      "userId",
      (id) => ({ workspaceId: ws, userId: id }),
    ],
    [
      "UpdateWorkspaceOwner.newOwner",
      WorkspaceService.method.updateWorkspaceOwner as never,
      "newOwner",
      (id) => ({ workspaceId: ws, newOwner: id }),
    ],
    ["GetTeam.id", TeamService.method.getTeam as never, "id", (id) => ({ workspaceId: ws, id })],
    [
      "AddTeamMember.teamId",
      TeamService.method.addTeamMember as never,
      "teamId",
      (id) => ({ workspaceId: ws, teamId: id, userId: uuid() }),
    ],
    [
      "RemoveTeamMember.userId",
      TeamService.method.removeTeamMember as never,
      "userId",
      (id) => ({ workspaceId: ws, teamId: uuid(), userId: id }),
    ],
    [
      "CreateTarget.caId",
      TargetService.method.createTarget as never,
      "caId",
      (id) => ({ workspaceId: ws, name: "x", caId: id }),
    ],
    [
      "GetSubjectAccess.subjectId",
      TargetService.method.getSubjectAccess as never,
      "subjectId",
      (id) => ({ workspaceId: ws, subjectId: id }),
    ],
    [
      "ListPrincipals.targetId",
      PrincipalService.method.listPrincipals as never,
      "targetId",
      (id) => ({ workspaceId: ws, targetId: id }),
    ],
    [
      "RevokeAllAccess.subjectId",
      PrincipalService.method.revokeAllAccess as never,
      "subjectId",
      (id) => ({ workspaceId: ws, subjectId: id, type: PrincipalType.USER }),
    ],
    [
      "ListWorkspaceMembers.teamIds[]",
      WorkspaceService.method.listWorkspaceMembers as never,
      "teamIds.0",
      (id) => ({ workspaceId: ws, teamIds: [id] }),
    ],
    [
      "GetTargetFilters.workspaceId",
      TargetService.method.getTargetFilters as never,
      "workspaceId",
      (id) => ({ workspaceId: id }),
    ],
  ];
  for (const [name, method, field, request] of idRules) {
    it(`${name} is a uuid`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.uuid(), fc.boolean(), async (id, upper) => {
          expect(
            await violatedFields(user, method, request(upper ? id.toUpperCase() : id) as never),
          ).not.toContain(field);
        }),
        { numRuns: 10 },
      );
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(
            fc.string({ maxLength: 40 }),
            fc.uuid().map((id) => id.slice(1)),
            fc.uuid().map((id) => `${id}0`),
          ),
          async (bad) => {
            fc.pre(!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(bad));
            expect(await violatedFields(user, method, request(bad) as never)).toContain(field);
          },
        ),
        { numRuns: 20 },
      );
    });
  }

  it("Add/RemoveSubjectsToPrincipal: 1 to 50 subject ids, a defined type other than UNSPECIFIED", async () => {
    const grantMethods: Array<DescMethodUnary<DescMessage, DescMessage>> = [
      PrincipalService.method.addSubjectsToPrincipal as never,
      PrincipalService.method.removeSubjectsFromPrincipal as never,
    ];
    for (const method of grantMethods) {
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 0, max: 80 }), async (count) => {
          const fields = await violatedFields(user, method, {
            workspaceId: ws,
            id: uuid(),
            subjectIds: Array.from({ length: count }, uuid),
            type: PrincipalType.USER,
          });
          expect(fields.includes("subjectIds")).toBe(count < 1 || count > 50);
        }),
        { numRuns: 30 },
      );
      for (const [type, bad] of [
        [PrincipalType.UNSPECIFIED, true],
        [4, true],
        [-1, true],
        [PrincipalType.USER, false],
        [PrincipalType.TEAM, false],
        [PrincipalType.SERVICE_ACCOUNT, false],
      ] as const) {
        const fields = await violatedFields(user, method, {
          workspaceId: ws,
          id: uuid(),
          subjectIds: [uuid()],
          type,
        });
        expect(fields.includes("type")).toBe(bad);
      }
      expect(
        await violatedFields(user, method, { workspaceId: ws, id: uuid(), subjectIds: [uuid()] }),
      ).toContain("type");
    }
    const filter = (type: number) =>
      violatedFields(user, PrincipalService.method.listPrincipals, { workspaceId: ws, type });
    expect(await filter(PrincipalType.UNSPECIFIED)).toContain("type");
    expect(await filter(9)).toContain("type");
    expect(await filter(PrincipalType.TEAM)).toEqual([]);
  });

  it("UpdateWorkspaceSettings expiries: 300s to 2592000s, whole seconds only", async () => {
    for (const field of ["enrollExpiry", "inviteExpiry"] as const) {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 0, max: 3_000_000 }),
          fc.integer({ min: 0, max: 999_999_999 }),
          async (s, nanos) => {
            const fields = await violatedFields(user, WorkspaceService.method.updateWorkspaceSettings, {
              workspaceId: ws,
              [field]: { seconds: BigInt(s), nanos },
            });
            const total = s + nanos / 1e9;
            const inside = s >= 300 && s <= 2_592_000 && nanos === 0;
            expect(fields.includes(field), `${total}s`).toBe(!inside);
          },
        ),
        { numRuns: 60 },
      );
      for (const [s, nanos, ok] of [
        [299, 999_999_999, false],
        [300, 0, true],
        [2_592_000, 0, true],
        [2_592_000, 1, false],
      ] as const) {
        const fields = await violatedFields(user, WorkspaceService.method.updateWorkspaceSettings, {
          workspaceId: ws,
          [field]: { seconds: BigInt(s), nanos },
        });
        expect(fields.includes(field)).toBe(!ok);
      }
    }
  });

  it("paging: limit 1 to 100 and offset at least 0 on every paged list", async () => {
    const lists = [
      WorkspaceService.method.listWorkspaceMembers,
      TeamService.method.listTeams,
      TargetService.method.listTargets,
      PrincipalService.method.listPrincipals,
    ] as const;
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...lists), fc.integer({ min: -200, max: 300 }), async (method, n) => {
        const limit = await violatedFields(user, method as never, { workspaceId: ws, limit: n } as never);
        expect(limit.includes("limit")).toBe(n < 1 || n > 100);
        const offset = await violatedFields(user, method as never, { workspaceId: ws, offset: n } as never);
        expect(offset.includes("offset")).toBe(n < 0);
      }),
      { numRuns: 60 },
    );
  });

  it("UpdateWorkspaceMember.roleName must name a role of the table", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.string(), fc.constantFrom("owner", "admin", "editor", "viewer", "Owner", "")),
        async (role) => {
          const fields = await violatedFields(user, WorkspaceService.method.updateWorkspaceMember, {
            workspaceId: ws,
            userId: uuid(),
            roleName: role,
          });
          expect(fields.includes("roleName")).toBe(!["owner", "admin", "editor", "viewer"].includes(role));
        },
      ),
    );
  });

  it("required path ids are required in the Connect form too", async () => {
    expect(await violatedFields(user, TeamService.method.getTeam, { workspaceId: ws })).toContain("id");
    expect(await violatedFields(user, PrincipalService.method.setPrincipals, { workspaceId: ws })).toContain(
      "targetId",
    );
    expect(
      await violatedFields(user, WorkspaceService.method.updateWorkspaceOwner, { workspaceId: ws }),
    ).toContain("newOwner");
    expect(await violatedFields(user, TeamService.method.createTeam, { workspaceId: ws })).toContain("name");
    expect(await violatedFields(user, TargetService.method.createTarget, { workspaceId: ws })).toContain(
      "name",
    );
    expect(
      await violatedFields(user, WorkspaceDomainService.method.createWorkspaceDomain, { workspaceId: ws }),
    ).toContain("domain");
  });
});
