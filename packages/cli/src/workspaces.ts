/**
 * Which workspace a command acts in: `--workspace <name or id>`, else the one `wap workspace use`
 * stored, else the only one the caller belongs to.
 *
 * @module
 */
import type { Workspace } from "@wap/api";
import { CliError } from "./exit-codes.js";
import type { CommandContext, SessionWith } from "./session.js";

export async function listWorkspaces(session: SessionWith<"workspaces">): Promise<Workspace[]> {
  return (await session.clients.workspaces.listWorkspaces({})).workspaces;
}

/** The workspace in `list` named or numbered `wanted` (names compare case-insensitively). */
export function findWorkspace(list: readonly Workspace[], wanted: string): Workspace {
  const found =
    list.find((w) => w.id === wanted) ?? list.find((w) => w.name.toLowerCase() === wanted.toLowerCase());
  if (found === undefined) {
    throw new CliError(
      `no workspace "${wanted}" among yours (${list.map((w) => w.name).join(", ") || "none"}): \`wap workspaces\` lists them`,
    );
  }
  return found;
}

export async function resolveWorkspace(
  ctx: CommandContext,
  session: SessionWith<"workspaces">,
): Promise<Workspace> {
  const list = await listWorkspaces(session);
  const wanted =
    ctx.options.workspace ?? (session.kind === "device" ? session.config.workspace?.id : undefined);
  if (wanted !== undefined) return findWorkspace(list, wanted);
  if (list.length === 1) return list[0]!;
  if (list.length === 0) {
    throw new CliError("you are not a member of any workspace yet: ask an administrator to invite you");
  }
  throw new CliError(
    `you are in ${list.length} workspaces (${list.map((w) => w.name).join(", ")}): choose one with --workspace <name> or \`wap workspace use <name>\``,
  );
}
