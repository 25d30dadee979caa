/** Workspace administration: the list, settings, members and invitations, teams, service accounts. */
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { useQuery } from "@connectrpc/connect-query";
import { Link, useNavigate, useParams } from "@tanstack/react-router";
import { ServiceAccountService, TeamService, UtilService, WorkspaceService } from "@wap/api";
import { useState } from "react";
import { Can, useAccess } from "../access";
import { api, when } from "../api";
import { useMe } from "../session";
import {
  ActionForm,
  Check,
  ChooseAndApply,
  ConfirmButton,
  Copyable,
  Empty,
  ErrorNote,
  Field,
  Notice,
  Page,
  QueryState,
  Section,
  Select,
  Table,
  text,
  useAction,
} from "../ui";
import { SetupProgress } from "./setup";

export function useWs(): string {
  return (useParams({ strict: false }) as { ws: string }).ws;
}

export function WorkspacesPage() {
  const navigate = useNavigate();
  const list = useQuery(WorkspaceService.method.listWorkspaces, {});
  const create = useAction(async (form: FormData) => {
    const { workspace } = await api.workspaces.createWorkspace({
      name: text(form, "name"),
      description: text(form, "description"),
    });
    await navigate({ to: "/w/$ws", params: { ws: workspace!.id } });
  });
  return (
    <Page title="Workspaces">
      <QueryState
        query={list}
        empty={(d) =>
          d.workspaces.length === 0 ? <Empty>No workspace yet: create the first one.</Empty> : undefined
        }
      >
        {(d) => (
          <ul className="cards">
            {d.workspaces.map((w) => (
              <li key={w.id}>
                <Link to="/w/$ws" params={{ ws: w.id }}>
                  {w.name}
                </Link>
                <span className="muted"> {w.description}</span>
              </li>
            ))}
          </ul>
        )}
      </QueryState>
      <Section title="Create a workspace">
        <ActionForm action={create} submit="Create workspace">
          <Field label="Name" name="name" required minLength={3} maxLength={256} />
          <Field label="Description" name="description" maxLength={1000} />
        </ActionForm>
      </Section>
    </Page>
  );
}

export function OverviewPage() {
  const ws = useWs();
  const navigate = useNavigate();
  const workspace = useQuery(WorkspaceService.method.getWorkspace, { workspaceId: ws });
  const access = useAccess(ws);
  const update = useAction((form: FormData) =>
    api.workspaces.updateWorkspace({
      workspaceId: ws,
      name: text(form, "name"),
      description: text(form, "description"),
    }),
  );
  const settings = useAction((form: FormData) =>
    api.workspaces.updateWorkspaceSettings({
      workspaceId: ws,
      enrollAutoApprove: form.get("auto") === "on",
      enrollExpiry: durationFromMs(Number(text(form, "enroll")) * 3_600_000),
      inviteExpiry: durationFromMs(Number(text(form, "invite")) * 3_600_000),
    }),
  );
  const remove = useAction(async () => {
    await api.workspaces.deleteWorkspace({ workspaceId: ws });
    await navigate({ to: "/" });
  });
  return (
    <QueryState query={workspace}>
      {({ workspace: w }) => (
        <Page title={w!.name}>
          <p className="muted">{w!.description}</p>
          <SetupProgress ws={ws} access={access} />
          <Section title="Settings">
            <Can access={access} need="workspace.update" doing="change the workspace's settings">
              <ActionForm action={update} submit="Save" key={`n${w!.updatedAt?.seconds}`}>
                <Field label="Name" name="name" defaultValue={w!.name} required minLength={3} />
                <Field label="Description" name="description" defaultValue={w!.description} />
              </ActionForm>
            </Can>
          </Section>
          <Section title="Enrolment and invitations">
            <Can
              access={access}
              need="workspace.update"
              doing="change how machines enrol and people join"
              quiet
            >
              <ActionForm action={settings} submit="Save settings">
                <Check
                  label="Accept enrolled daemons without review"
                  name="auto"
                  defaultChecked={w!.settings?.enrollAutoApprove}
                />
                <Field
                  label="Enrolment token lifetime (hours)"
                  name="enroll"
                  type="number"
                  min={1}
                  max={720}
                  defaultValue={24}
                />
                <Field
                  label="Invitation link lifetime (hours)"
                  name="invite"
                  type="number"
                  min={1}
                  max={720}
                  defaultValue={168}
                />
              </ActionForm>
              {settings.result && <Notice>Saved.</Notice>}
            </Can>
            <p className="muted">
              Current enrolment token expires {when(w!.settings?.enrollExpiresAt)}; invitation link{" "}
              {when(w!.settings?.inviteExpiresAt)}.
            </p>
          </Section>
          <Section title="Danger zone">
            <Can access={access} need="workspace.delete" doing="delete the workspace">
              <ConfirmButton
                label="Delete workspace"
                question={`Delete ${w!.name} with its members' access, authorities, targets, daemons and recordings? This cannot be undone.`}
                confirm={`Yes, delete ${w!.name}`}
                onConfirm={() => remove.act()}
              />
            </Can>
            <ErrorNote error={remove.error} />
          </Section>
        </Page>
      )}
    </QueryState>
  );
}

const article = (word: string) => (/^[aeiou]/.test(word) ? "an" : "a");

function useRoles(kind: "user" | "sa") {
  const roles = useQuery(UtilService.method.listRoles, {});
  return (roles.data?.roles ?? [])
    .filter((r) => (kind === "user" ? r.assignableToUsers : r.assignableToServiceAccounts))
    .map((r) => [r.name, r.name] as const);
}

export function MembersPage() {
  const ws = useWs();
  const me = useMe();
  const [query, setQuery] = useState("");
  const members = useQuery(WorkspaceService.method.listWorkspaceMembers, {
    workspaceId: ws,
    limit: 100,
    query,
  });
  const roles = useRoles("user");
  const access = useAccess(ws);
  const manage = access.can("members.manage");
  const setRole = useAction((userId: string, roleName: string) =>
    api.workspaces.updateWorkspaceMember({ workspaceId: ws, userId, roleName }),
  );
  const remove = useAction((userId: string) =>
    api.workspaces.removeWorkspaceMember({ workspaceId: ws, userId }),
  );
  const transfer = useAction((userId: string) =>
    api.workspaces.updateWorkspaceOwner({ workspaceId: ws, newOwner: userId }),
  );
  const invite = useAction(() => api.invitations.refreshInviteToken({ workspaceId: ws }));
  const revoke = useAction(async () => {
    await api.invitations.revokeInviteToken({ workspaceId: ws });
    invite.reset();
  });
  return (
    <Page title="Members">
      <Section title="Invitation link">
        <Can access={access} need="invitations.manage" doing="invite people">
          <p>
            Anyone with the link can join as a member until it expires. Making a new link ends the old one.
          </p>
          {invite.result && (
            <>
              <Copyable text={invite.result.link} label="Invitation link" />
              <p className="muted">Valid until {when(invite.result.expiresAt)}.</p>
            </>
          )}
          <div className="row">
            <button type="button" onClick={() => void invite.act()} disabled={invite.busy}>
              {invite.result ? "Make a new link" : "Create invitation link"}
            </button>
            <ConfirmButton
              label="Revoke link"
              question="Revoke the invitation link? Nobody can join with it any more; members who joined stay."
              confirm="Yes, revoke the link"
              disabled={revoke.busy}
              onConfirm={() => revoke.act()}
            />
          </div>
          <ErrorNote error={invite.error ?? revoke.error} />
        </Can>
      </Section>
      <Can access={access} need="members.manage" doing="change members' roles or remove members">
        {null}
      </Can>
      <Field label="Search members" type="search" value={query} onChange={(e) => setQuery(e.target.value)} />
      <ErrorNote error={setRole.error ?? remove.error ?? transfer.error} />
      <QueryState
        query={members}
        empty={(d) => (d.members.length === 0 ? <Empty>No member matches.</Empty> : undefined)}
      >
        {(d) => (
          <Table caption="Members" head={["Name", "Email", "Role", "Actions"]}>
            {d.members.map((m) => (
              <tr key={m.id}>
                <td>
                  {m.name} <span className="muted">@{m.username}</span>
                </td>
                <td>{m.email}</td>
                <td>
                  {m.roleName === "owner" || !manage ? (
                    m.roleName
                  ) : (
                    <ChooseAndApply
                      key={m.roleName}
                      label={`Role of ${m.name}`}
                      options={roles.length ? roles : [[m.roleName, m.roleName]]}
                      initial={m.roleName}
                      apply={`Change role of ${m.name}`}
                      question={(role) =>
                        `Make ${m.name} ${article(role)} ${role} instead of ${article(m.roleName)} ${m.roleName}?`
                      }
                      onApply={(role) => setRole.act(m.id, role)}
                    />
                  )}
                </td>
                <td className="row">
                  {m.id !== me.user?.id && m.roleName !== "owner" && (
                    <>
                      <Can access={access} need="workspace.transfer" doing="" quiet>
                        <ConfirmButton
                          className="secondary"
                          label={`Make ${m.name} owner`}
                          question={`Make ${m.name} the owner of the workspace? You become an administrator.`}
                          confirm={`Yes, make ${m.name} owner`}
                          onConfirm={() => transfer.act(m.id)}
                        />
                      </Can>
                      <Can access={access} need="members.manage" doing="" quiet>
                        <ConfirmButton
                          label={`Remove ${m.name}`}
                          question={`Remove ${m.name} (${m.email}) from the workspace? They lose every login granted here.`}
                          confirm={`Yes, remove ${m.name}`}
                          onConfirm={() => remove.act(m.id)}
                        />
                      </Can>
                    </>
                  )}
                </td>
              </tr>
            ))}
          </Table>
        )}
      </QueryState>
    </Page>
  );
}

export function TeamsPage() {
  const ws = useWs();
  const teams = useQuery(TeamService.method.listTeams, { workspaceId: ws, limit: 100 });
  const access = useAccess(ws);
  const members = useQuery(WorkspaceService.method.listWorkspaceMembers, { workspaceId: ws, limit: 100 });
  const create = useAction((form: FormData) =>
    api.teams.createTeam({
      workspaceId: ws,
      name: text(form, "name"),
      description: text(form, "description"),
    }),
  );
  const addMember = useAction((teamId: string, userId: string) =>
    api.teams.addTeamMember({ workspaceId: ws, teamId, userId }),
  );
  const removeMember = useAction((teamId: string, userId: string) =>
    api.teams.removeTeamMember({ workspaceId: ws, teamId, userId }),
  );
  const remove = useAction((id: string) => api.teams.deleteTeam({ workspaceId: ws, id }));
  const options = [
    ["", "Add a member…"] as const,
    ...(members.data?.members ?? []).map((m) => [m.id, m.name] as const),
  ];
  return (
    <Page title="Teams">
      <Can access={access} need="teams.manage" doing="create, change or delete teams">
        {null}
      </Can>
      <ErrorNote error={addMember.error ?? removeMember.error ?? remove.error} />
      <QueryState
        query={teams}
        empty={(d) => (d.teams.length === 0 ? <Empty>No team yet.</Empty> : undefined)}
      >
        {(d) => (
          <div className="stack">
            {d.teams.map((t) => (
              <Section key={t.id} title={t.name}>
                <p className="muted">{t.description}</p>
                <ul>
                  {t.members.map((m) => (
                    <li key={m.id}>
                      {m.name}{" "}
                      <Can access={access} need="teams.manage" doing="" quiet>
                        <ConfirmButton
                          className="link"
                          label={`Remove ${m.name} from ${t.name}`}
                          question={`Remove ${m.name} from ${t.name}? They lose the logins granted to the team.`}
                          confirm={`Yes, remove ${m.name} from ${t.name}`}
                          onConfirm={() => removeMember.act(t.id, m.id)}
                        />
                      </Can>
                    </li>
                  ))}
                </ul>
                <Can access={access} need="teams.manage" doing="" quiet>
                  <div className="row">
                    <ChooseAndApply
                      label={`Add a member to ${t.name}`}
                      options={options}
                      apply={`Add to ${t.name}`}
                      onApply={(userId) => addMember.act(t.id, userId)}
                    />
                    <ConfirmButton
                      label={`Delete team ${t.name}`}
                      question={`Delete the team ${t.name}? Its members lose the logins granted to the team.`}
                      confirm={`Yes, delete ${t.name}`}
                      onConfirm={() => remove.act(t.id)}
                    />
                  </div>
                </Can>
              </Section>
            ))}
          </div>
        )}
      </QueryState>
      <Can access={access} need="teams.manage" doing="" quiet>
        <Section title="Create a team">
          <ActionForm action={create} submit="Create team">
            <Field label="Name" name="name" required />
            <Field label="Description" name="description" />
          </ActionForm>
        </Section>
      </Can>
    </Page>
  );
}

export function ServiceAccountsPage() {
  const ws = useWs();
  const list = useQuery(ServiceAccountService.method.listServiceAccounts, { workspaceId: ws, limit: 100 });
  const roles = useRoles("sa");
  const access = useAccess(ws);
  const create = useAction((form: FormData) =>
    api.serviceAccounts.createServiceAccount({
      workspaceId: ws,
      name: text(form, "name"),
      description: text(form, "description"),
      roleName: text(form, "role"),
    }),
  );
  const remove = useAction((id: string) => api.serviceAccounts.deleteServiceAccount({ workspaceId: ws, id }));
  return (
    <Page title="Service accounts">
      <Can access={access} need="service_accounts.manage" doing="create or delete service accounts">
        {null}
      </Can>
      {create.result && (
        <Section title={`Token of ${create.result.serviceAccount?.name}`}>
          <Notice>Copy the token now: it is shown only this once.</Notice>
          <Copyable text={create.result.token} label="Service account token" />
          <button type="button" className="secondary" onClick={create.reset}>
            Done
          </button>
        </Section>
      )}
      <ErrorNote error={remove.error} />
      <QueryState
        query={list}
        empty={(d) => (d.serviceAccounts.length === 0 ? <Empty>No service account yet.</Empty> : undefined)}
      >
        {(d) => (
          <Table caption="Service accounts" head={["Name", "Role", "Last used", "Created", "Actions"]}>
            {d.serviceAccounts.map((sa) => (
              <tr key={sa.id}>
                <td>
                  {sa.name}
                  <div className="muted">{sa.description}</div>
                </td>
                <td>{sa.roleName}</td>
                <td>{when(sa.lastUsedAt)}</td>
                <td>{when(sa.createdAt)}</td>
                <td>
                  <Can access={access} need="service_accounts.manage" doing="" quiet>
                    <ConfirmButton
                      label={`Delete ${sa.name}`}
                      question={`Delete the service account ${sa.name}? Its token stops working at once.`}
                      confirm={`Yes, delete ${sa.name}`}
                      onConfirm={() => remove.act(sa.id)}
                    />
                  </Can>
                </td>
              </tr>
            ))}
          </Table>
        )}
      </QueryState>
      <Can access={access} need="service_accounts.manage" doing="" quiet>
        <Section title="Create a service account">
          <ActionForm action={create} submit="Create service account">
            <Field
              label="Name"
              name="name"
              required
              pattern="[a-zA-Z0-9][a-zA-Z0-9\-_]*"
              title="Letters, digits, - and _, starting with a letter or digit"
              hint="Letters, digits, - and _."
            />
            <Field label="Description" name="description" />
            <Select
              label="Role"
              name="role"
              options={
                roles.length
                  ? roles
                  : [
                      ["viewer", "viewer"],
                      ["editor", "editor"],
                    ]
              }
            />
          </ActionForm>
        </Section>
      </Can>
    </Page>
  );
}
