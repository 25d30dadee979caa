/**
 * TeamService: named groups of workspace members. A team can be granted principals like a user;
 * its members reach what the team reaches. Team names are unique in a workspace. Removing a
 * member from the workspace removes them from its teams; deleting a team removes its grants.
 *
 * @module
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { type TeamSchema, TeamService } from "@wap/api";
import * as z from "zod";
import { AlreadyExistsError } from "../errors.js";
import { toWorkspaceMemberMessage } from "../members/messages.js";
import { memberNotFound } from "../members/operations.js";
import { defineOperation } from "../operations/operation.js";
import { teamNotFound } from "../principals/not-found.js";
import { type Repositories, UniqueViolationError } from "../storage/storage.js";
import type { TeamMemberProfileRecord, TeamRecord } from "../storage/teams.js";
import { description, plainName, tagLimits } from "../validation/bounds.js";
import { defaultPage, paging, text, uuid } from "../validation/rules.js";

function toTeamMessage(
  team: TeamRecord,
  members: readonly TeamMemberProfileRecord[],
): MessageInitShape<typeof TeamSchema> {
  return {
    id: team.id,
    workspaceId: team.workspaceId,
    name: team.name,
    description: team.description,
    tags: [...team.tags],
    members: members.filter((m) => m.teamId === team.id).map(toWorkspaceMemberMessage),
    createdAt: timestampFromDate(team.createdAt),
    updatedAt: timestampFromDate(team.updatedAt),
  };
}

const nameTaken = (name: string) =>
  new AlreadyExistsError(`a team named '${name}' already exists in this workspace`, {
    reason: "TEAM_NAME_TAKEN",
  });

const workspaceId = uuid.optional();
const tags = z
  .array(text({ min: 1, max: tagLimits.length }))
  .max(tagLimits.count, `at most ${tagLimits.count} tags`);

async function withMembers(repos: Repositories, team: TeamRecord) {
  return toTeamMessage(team, await repos.teams.listMembers(team.workspaceId, [team.id]));
}

export const getTeam = defineOperation({
  method: TeamService.method.getTeam,
  access: { kind: "workspace", permission: "teams.read" },
  input: z.object({ workspaceId, id: uuid }),
  async run({ input, workspace, services }) {
    const team = await services.storage.teams.findById(workspace.workspaceId, input.id);
    if (!team) throw teamNotFound(input.id);
    return { team: await withMembers(services.storage, team) };
  },
});

export const listTeams = defineOperation({
  method: TeamService.method.listTeams,
  access: { kind: "workspace", permission: "teams.read" },
  input: z.object({ workspaceId, ...paging, query: text({ max: 256 }).optional(), tags }),
  async run({ input, workspace, services }) {
    const page = await services.storage.teams.list(workspace.workspaceId, {
      limit: input.limit ?? defaultPage.limit,
      offset: input.offset ?? defaultPage.offset,
      ...(input.query && { query: input.query }),
      ...(input.tags.length > 0 && { tags: input.tags }),
    });
    const members = await services.storage.teams.listMembers(
      workspace.workspaceId,
      page.items.map((team) => team.id),
    );
    return { teams: page.items.map((team) => toTeamMessage(team, members)), total: page.total };
  },
});

export const createTeam = defineOperation({
  method: TeamService.method.createTeam,
  access: { kind: "workspace", permission: "teams.manage" },
  input: z.object({ workspaceId, name: plainName, description: description.optional(), tags }),
  async run({ input, workspace, services, now, audit }) {
    const team: TeamRecord = {
      id: services.random.uuid(),
      workspaceId: workspace.workspaceId,
      name: input.name,
      description: input.description ?? "",
      tags: input.tags,
      createdAt: now,
      updatedAt: now,
    };
    try {
      await services.storage.transaction(async (tx) => {
        await tx.teams.insert(team);
        await audit(tx, { action: "team.create", resource: `team:${team.id}` });
      });
    } catch (error) {
      if (error instanceof UniqueViolationError) throw nameTaken(input.name);
      throw error;
    }
    return { team: toTeamMessage(team, []) };
  },
});

export const updateTeam = defineOperation({
  method: TeamService.method.updateTeam,
  access: { kind: "workspace", permission: "teams.manage" },
  input: z.object({
    workspaceId,
    id: uuid,
    name: plainName.optional(),
    description: description.optional(),
    tags,
  }),
  async run({ input, workspace, services, now, audit }) {
    try {
      const team = await services.storage.transaction(async (tx) => {
        const updated = await tx.teams.update(
          workspace.workspaceId,
          input.id,
          {
            ...(input.name !== undefined && { name: input.name }),
            ...(input.description !== undefined && { description: input.description }),
            // Lists have no presence on the wire: an empty list leaves the tags as they are.
            ...(input.tags.length > 0 && { tags: input.tags }),
          },
          now,
        );
        if (!updated) throw teamNotFound(input.id);
        await audit(tx, { action: "team.update", resource: `team:${input.id}` });
        return updated;
      });
      return { team: await withMembers(services.storage, team) };
    } catch (error) {
      if (error instanceof UniqueViolationError) throw nameTaken(input.name ?? "");
      throw error;
    }
  },
});

export const deleteTeam = defineOperation({
  method: TeamService.method.deleteTeam,
  notifiesDaemons: ["workspace"],
  access: { kind: "workspace", permission: "teams.manage" },
  input: z.object({ workspaceId, id: uuid }),
  async run({ input, workspace, services, audit }) {
    await services.storage.transaction(async (tx) => {
      if (!(await tx.teams.delete(workspace.workspaceId, input.id))) throw teamNotFound(input.id);
      await audit(tx, { action: "team.delete", resource: `team:${input.id}` });
    });
    return {};
  },
});

export const addTeamMember = defineOperation({
  method: TeamService.method.addTeamMember,
  notifiesDaemons: ["team_targets"],
  access: { kind: "workspace", permission: "teams.manage" },
  input: z.object({ workspaceId, teamId: uuid, userId: uuid }),
  async run({ input, workspace, services, now, audit }) {
    await services.storage.transaction(async (tx) => {
      if (!(await tx.teams.findById(workspace.workspaceId, input.teamId))) throw teamNotFound(input.teamId);
      if (!(await tx.members.find(workspace.workspaceId, input.userId))) throw memberNotFound(input.userId);
      // Adding someone who is in the team already changes nothing and is not an error.
      if (await tx.teams.addMember(workspace.workspaceId, input.teamId, input.userId, now)) {
        await audit(tx, { action: "team.member.add", resource: `team:${input.teamId}` });
      }
    });
    return {};
  },
});

export const removeTeamMember = defineOperation({
  method: TeamService.method.removeTeamMember,
  notifiesDaemons: ["team_targets"],
  access: { kind: "workspace", permission: "teams.manage" },
  input: z.object({ workspaceId, teamId: uuid, userId: uuid }),
  async run({ input, workspace, services, audit }) {
    await services.storage.transaction(async (tx) => {
      if (!(await tx.teams.findById(workspace.workspaceId, input.teamId))) throw teamNotFound(input.teamId);
      if (!(await tx.teams.removeMember(workspace.workspaceId, input.teamId, input.userId))) {
        throw memberNotFound(input.userId);
      }
      await audit(tx, { action: "team.member.remove", resource: `team:${input.teamId}` });
    });
    return {};
  },
});

export const teamOperations = [
  getTeam,
  listTeams,
  createTeam,
  updateTeam,
  deleteTeam,
  addTeamMember,
  removeTeamMember,
];
