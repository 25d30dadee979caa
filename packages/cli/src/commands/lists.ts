/**
 * Listings: `wap workspaces`, `wap workspace use`, `wap targets`, `wap cas`, `wap sessions`.
 * A table for people, `--json` for scripts.
 *
 * @module
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import { AuthorityType } from "@wap/api";
import { reachableTargets, subjectAccess } from "../access.js";
import { usageError } from "../exit-codes.js";
import { printable, table } from "../output.js";
import { RpcError } from "../rpc-errors.js";
import { type CommandContext, withSession } from "../session.js";
import { findWorkspace, listWorkspaces, resolveWorkspace } from "../workspaces.js";

export async function workspaces(ctx: CommandContext): Promise<void> {
  await withSession(ctx, async (session) => {
    const list = await listWorkspaces(session);
    const current = ctx.options.workspace ?? session.config.workspace?.id;
    const rows = list.map((w) => ({
      id: w.id,
      name: w.name,
      current: current === undefined ? list.length === 1 : w.id === current || w.name === current,
    }));
    ctx.out.result(rows, () =>
      rows.length === 0
        ? "You are not a member of any workspace yet."
        : table(
            ["", "NAME", "ID"],
            rows.map((w) => [w.current ? "*" : "", w.name, w.id]),
          ),
    );
  });
}

export async function useWorkspace(ctx: CommandContext, name: string): Promise<void> {
  await withSession(ctx, async (session) => {
    if (session.kind !== "device") throw usageError("with a token, pass --workspace to each command instead");
    const chosen = findWorkspace(await listWorkspaces(session), name);
    await ctx.store.update((config) => ({ ...config, workspace: { id: chosen.id, name: chosen.name } }));
    ctx.out.result(
      { id: chosen.id, name: chosen.name },
      () => `Now using workspace ${printable(chosen.name)}.`,
    );
  });
}

const onlineState = (online: boolean | undefined) =>
  online === undefined ? "no agent" : online ? "online" : "offline";

export async function targets(ctx: CommandContext): Promise<void> {
  await withSession(ctx, async (session) => {
    const workspace = await resolveWorkspace(ctx, session);
    const rows = reachableTargets(await subjectAccess(session, workspace.id)).map((r) => ({
      id: r.target.id,
      name: r.target.name,
      state: onlineState(r.daemon?.online),
      online: r.daemon?.online ?? false,
      logins: r.logins,
      endpoints: r.target.endpoints,
      caId: r.target.caId,
      workspaceId: workspace.id,
    }));
    ctx.out.result(rows, () =>
      rows.length === 0
        ? `You cannot reach any target in ${printable(workspace.name)} yet.`
        : table(
            ["NAME", "STATE", "LOGINS", "ENDPOINTS"],
            rows.map((t) => [t.name, t.state, t.logins.join(","), t.endpoints.join(",")]),
          ),
    );
  });
}

const authorityKind = (type: AuthorityType) =>
  type === AuthorityType.SSH ? "ssh" : type === AuthorityType.X509 ? "x509" : "unknown";

export async function cas(ctx: CommandContext): Promise<void> {
  await withSession(ctx, async (session) => {
    const workspace = await resolveWorkspace(ctx, session);
    const { certificateAuthorities } = await session.clients.certificates.listCertificateAuthorities({
      workspaceId: workspace.id,
    });
    const rows = certificateAuthorities.map((ca) => ({
      id: ca.id,
      name: ca.name,
      type: authorityKind(ca.authorityType),
      active: ca.isActive,
      default: ca.isDefault,
      notAfter: ca.notAfter ? timestampDate(ca.notAfter).toISOString() : null,
      publicKey: ca.publicKey,
    }));
    ctx.out.result(rows, () =>
      rows.length === 0
        ? `Workspace ${printable(workspace.name)} has no certificate authorities.`
        : table(
            ["NAME", "TYPE", "ACTIVE", "DEFAULT", "NOT AFTER", "ID"],
            rows.map((ca) => [ca.name, ca.type, yes(ca.active), yes(ca.default), ca.notAfter ?? "-", ca.id]),
          ),
    );
  });
}

const yes = (value: boolean) => (value ? "yes" : "no");

export async function sessions(ctx: CommandContext): Promise<void> {
  await withSession(ctx, async (session) => {
    const workspace = await resolveWorkspace(ctx, session);
    const access = await subjectAccess(session, workspace.id);
    const rows: Array<{
      sessionId: string;
      target: string;
      daemonId: string;
      login: string;
      userId: string;
    }> = [];
    let denied: RpcError | undefined;
    for (const daemon of access.daemons) {
      try {
        const listed = await session.clients.daemons.listSessions({
          workspaceId: workspace.id,
          daemonId: daemon.id,
        });
        for (const s of listed.sessions) {
          rows.push({
            sessionId: s.sessionId,
            target: listed.daemonName || daemon.name,
            daemonId: daemon.id,
            login: s.username,
            userId: s.userId,
          });
        }
      } catch (error) {
        if (!(error instanceof RpcError && error.code === Code.PermissionDenied)) throw error;
        denied = error;
      }
    }
    if (denied !== undefined && rows.length === 0) throw denied;
    ctx.out.result(rows, () =>
      rows.length === 0
        ? `No open sessions on the targets you can reach in ${printable(workspace.name)}.`
        : table(
            ["SESSION", "TARGET", "LOGIN", "USER"],
            rows.map((s) => [s.sessionId, s.target, s.login, s.userId]),
          ),
    );
  });
}
