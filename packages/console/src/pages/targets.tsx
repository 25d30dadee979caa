/** Targets with live online state, daemons to accept, the enrolment token, who may log in as whom. */
import { useQuery } from "@connectrpc/connect-query";
import { useQueryClient } from "@tanstack/react-query";
import {
  AuthorityType,
  CertificateService,
  type Daemon,
  DaemonService,
  DaemonStatus,
  PrincipalType,
  type Target,
  TargetService,
  WorkspaceService,
} from "@wap/api";
import { useEffect, useState } from "react";
import { Can, useAccess } from "../access";
import { api, serverUrl, when } from "../api";
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
import { GrantLimitsEditor } from "./grant-limits";
import { useWs } from "./workspace";

/**
 * Keeps the page current: every workspace event (a daemon connecting or leaving, a change by
 * someone else) refetches what is shown. The stream reconnects after a pause if it breaks.
 */
export function useWorkspaceEvents(ws: string) {
  const queryClient = useQueryClient();
  const [live, setLive] = useState(false);
  useEffect(() => {
    const abort = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const run = async () => {
      try {
        const stream = api.workspaces.subscribeWorkspaceEvents({ workspaceId: ws }, { signal: abort.signal });
        setLive(true);
        for await (const _event of stream) await queryClient.invalidateQueries();
      } catch {
        // Broken or refused: try again shortly unless the page is gone.
      }
      setLive(false);
      if (!abort.signal.aborted) timer = setTimeout(() => void run(), 5_000);
    };
    void run();
    return () => {
      abort.abort();
      clearTimeout(timer);
    };
  }, [ws, queryClient]);
  return live;
}

export function Online({ online }: { online: boolean }) {
  return <span className={online ? "badge ok" : "badge"}>{online ? "online" : "offline"}</span>;
}

const statusName = (s: DaemonStatus) => (DaemonStatus[s] ?? "unknown").toLowerCase();

export function DaemonsPage() {
  const ws = useWs();
  const live = useWorkspaceEvents(ws);
  const daemons = useQuery(DaemonService.method.listDaemons, { workspaceId: ws, limit: 100 });
  const access = useAccess(ws);
  const manage = access.can("daemons.manage");
  const update = useAction((daemon: Daemon, patch: { status?: DaemonStatus; recordSessions?: boolean }) =>
    api.daemons.updateDaemon({
      workspaceId: ws,
      id: daemon.id,
      ...(patch.status !== undefined && { status: patch.status }),
      config: { recordSessions: patch.recordSessions ?? daemon.config?.recordSessions ?? false },
    }),
  );
  const remove = useAction((daemon: Daemon) => api.daemons.deleteDaemon({ workspaceId: ws, id: daemon.id }));
  const token = useAction(() => api.daemons.refreshEnrollToken({ workspaceId: ws }));
  const revoke = useAction(async () => {
    await api.daemons.revokeEnrollToken({ workspaceId: ws });
    token.reset();
  });
  const pending = daemons.data?.daemons.filter((d) => d.status === DaemonStatus.PENDING) ?? [];
  return (
    <Page title="Daemons" actions={<span className="muted">{live ? "live" : "not live"}</span>}>
      <Section title="Enrol a machine">
        <Can access={access} need="daemons.manage" doing="enrol machines, accept or delete daemons">
          <p>
            Paste the command into a shell on the machine: it installs the agent from this server, checks what
            it downloads, and enrols the machine. The token travels in the environment, never on a command
            line. A new token ends the previous one.
          </p>
          {token.result && (
            <>
              <Copyable
                label="Enrolment command"
                text={`export WAP_ENROLL_TOKEN=${token.result.token}; curl -fsSL ${serverUrl}/install/agent.sh | sudo --preserve-env=WAP_ENROLL_TOKEN sh`}
              />
              <p className="muted">The token is valid until {when(token.result.expiresAt)}.</p>
            </>
          )}
          <div className="row">
            <button type="button" onClick={() => void token.act()} disabled={token.busy}>
              {token.result ? "New enrolment token" : "Create enrolment token"}
            </button>
            <ConfirmButton
              label="Revoke token"
              question="Revoke the enrolment token? Machines not yet enrolled with it cannot enrol; enrolled daemons stay."
              confirm="Yes, revoke the token"
              onConfirm={() => revoke.act()}
            />
          </div>
          <ErrorNote error={token.error ?? revoke.error} />
        </Can>
      </Section>
      {pending.length > 0 && manage && (
        <Section title="Waiting for approval">
          <ul className="stack">
            {pending.map((d) => (
              <li key={d.id} className="row">
                <strong>{d.name}</strong> <Online online={d.online} />{" "}
                <span className="muted">enrolled {when(d.createdAt)}</span>
                <button type="button" onClick={() => void update.act(d, { status: DaemonStatus.ACCEPTED })}>
                  Accept {d.name}
                </button>
                <ConfirmButton
                  label={`Reject ${d.name}`}
                  question={`Reject ${d.name}? It is refused and serves no login.`}
                  confirm={`Yes, reject ${d.name}`}
                  onConfirm={() => update.act(d, { status: DaemonStatus.REJECTED })}
                />
              </li>
            ))}
          </ul>
        </Section>
      )}
      <ErrorNote error={update.error ?? remove.error} />
      <QueryState
        query={daemons}
        empty={(d) => (d.daemons.length === 0 ? <Empty>No daemon has enrolled yet.</Empty> : undefined)}
      >
        {(d) => (
          <Table caption="Daemons" head={["Name", "State", "Status", "Recording", "Updated", ""]}>
            {d.daemons.map((daemon) => (
              <tr key={daemon.id}>
                <td>{daemon.name}</td>
                <td>
                  <Online online={daemon.online} />
                </td>
                <td>{statusName(daemon.status)}</td>
                <td>
                  <Check
                    label={`Record sessions on ${daemon.name}`}
                    checked={daemon.config?.recordSessions ?? false}
                    disabled={!manage}
                    onChange={(e) => void update.act(daemon, { recordSessions: e.target.checked })}
                  />
                </td>
                <td>{when(daemon.updatedAt)}</td>
                <td>
                  <Can access={access} need="daemons.manage" doing="" quiet>
                    <ConfirmButton
                      label={`Delete ${daemon.name}`}
                      question={`Delete the daemon ${daemon.name}? Its targets lose their daemon and nobody can log in through it.`}
                      confirm={`Yes, delete ${daemon.name}`}
                      onConfirm={() => remove.act(daemon)}
                    />
                  </Can>
                </td>
              </tr>
            ))}
          </Table>
        )}
      </QueryState>
    </Page>
  );
}

export function TargetsPage() {
  const ws = useWs();
  useWorkspaceEvents(ws);
  const targets = useQuery(TargetService.method.listTargets, { workspaceId: ws, limit: 100 });
  const daemons = useQuery(DaemonService.method.listDaemons, { workspaceId: ws, limit: 100 });
  const cas = useQuery(CertificateService.method.listCertificateAuthorities, { workspaceId: ws });
  const access = useAccess(ws);
  const [open, setOpen] = useState<string>();
  const create = useAction((form: FormData) =>
    api.targets.createTarget({
      workspaceId: ws,
      name: text(form, "name"),
      description: text(form, "description"),
      caId: text(form, "caId"),
      endpoints: text(form, "endpoints")
        .split(/[\s,]+/)
        .filter(Boolean),
    }),
  );
  // What a daemon reports that differs from its target's endpoints waits for an administrator:
  // host certificates name only approved addresses.
  const approve = useAction((t: Target) =>
    api.targets.updateTarget({ workspaceId: ws, id: t.id, endpoints: t.reportedEndpoints }),
  );
  const online = new Map(daemons.data?.daemons.map((d) => [d.id, d.online]));
  const sshAuthorities = (cas.data?.certificateAuthorities ?? [])
    .filter((c) => c.authorityType !== AuthorityType.X509)
    .sort((a, b) => Number(b.isDefault) - Number(a.isDefault));
  return (
    <Page title="Targets">
      <QueryState
        query={targets}
        empty={(d) =>
          d.targets.length === 0 ? <Empty>No target yet: enrol a daemon or add one.</Empty> : undefined
        }
      >
        {(d) => (
          <Table caption="Targets" head={["Name", "Daemon", "Log in as", ""]}>
            {d.targets.map((t) => (
              <tr key={t.id}>
                <td>
                  {t.name}
                  <div className="muted">{t.description}</div>
                  {t.reportedEndpoints.length > 0 && (
                    <div role="note">
                      Its daemon reports {t.reportedEndpoints.join(", ")}; its host certificate names{" "}
                      {t.endpoints.join(", ") || "no address"} until you approve.{" "}
                      <button type="button" onClick={() => void approve.act(t)} disabled={approve.busy}>
                        Approve the addresses of {t.name}
                      </button>
                    </div>
                  )}
                </td>
                <td>{t.daemonId ? <Online online={online.get(t.daemonId) ?? false} /> : "none"}</td>
                <td>{t.principals.map((p) => p.username).join(", ") || "—"}</td>
                <td>
                  <button
                    type="button"
                    className="secondary"
                    aria-expanded={open === t.id}
                    onClick={() => setOpen(open === t.id ? undefined : t.id)}
                  >
                    Access to {t.name}
                  </button>
                </td>
              </tr>
            ))}
          </Table>
        )}
      </QueryState>
      <ErrorNote error={approve.error} />
      {open && targets.data?.targets.find((t) => t.id === open) && (
        <TargetAccess target={targets.data.targets.find((t) => t.id === open)!} />
      )}
      <Section title="Add a target">
        <Can access={access} need="targets.manage" doing="add targets">
          <ActionForm action={create} submit="Add target">
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
              label="SSH certificate authority"
              name="caId"
              // Targets trust SSH authorities only; the workspace's default comes first.
              options={sshAuthorities.map(
                (c) => [c.id, c.isDefault ? `${c.name} (default)` : c.name] as const,
              )}
            />
            <Field
              label="Endpoints"
              name="endpoints"
              hint="Host names or IP addresses, each with an optional port, separated by spaces; an IPv6 address with a port in brackets: web-01.internal 10.0.0.5:4022 [fd00::5]:4022"
            />
          </ActionForm>
        </Can>
      </Section>
    </Page>
  );
}

/** The limits of one subject's grant of a principal. */
function LimitsOf({
  principal,
  subjectId,
  who,
}: {
  principal: Target["principals"][number];
  subjectId: string;
  who: string;
}) {
  const ws = useWs();
  const access = useAccess(ws);
  const grant = principal.grants.find((g) => g.subjectId === subjectId);
  if (!grant) return null;
  return (
    <GrantLimitsEditor
      workspaceId={ws}
      principalId={principal.id}
      grant={grant}
      who={who}
      canEdit={access.can("principals.manage")}
    />
  );
}

/** Usernames on a target, and the people, teams and service accounts granted each. */
function TargetAccess({ target }: { target: Target }) {
  const ws = useWs();
  const members = useQuery(WorkspaceService.method.listWorkspaceMembers, { workspaceId: ws, limit: 100 });
  const names = new Map(members.data?.members.map((m) => [m.id, m.name]));
  const access = useAccess(ws);
  const usernames = target.principals.map((p) => p.username);
  const addUsername = useAction((form: FormData) =>
    api.principals.setPrincipals({
      workspaceId: ws,
      targetId: target.id,
      usernames: [...usernames, text(form, "username")],
    }),
  );
  const removeUsername = useAction((username: string) =>
    api.principals.setPrincipals({
      workspaceId: ws,
      targetId: target.id,
      usernames: usernames.filter((u) => u !== username),
    }),
  );
  const grant = useAction((principalId: string, userId: string) =>
    api.principals.addSubjectsToPrincipal({
      workspaceId: ws,
      id: principalId,
      subjectIds: [userId],
      type: PrincipalType.USER,
    }),
  );
  const revoke = useAction((principalId: string, userId: string) =>
    api.principals.removeSubjectsFromPrincipal({
      workspaceId: ws,
      id: principalId,
      subjectIds: [userId],
      type: PrincipalType.USER,
    }),
  );
  const memberOptions = [
    ["", "Choose a member…"] as const,
    ...(members.data?.members ?? []).map((m) => [m.id, `${m.name} (${m.email})`] as const),
  ];
  return (
    <Section title={`Who may log in to ${target.name}`}>
      <Can access={access} need="principals.manage" doing="grant or revoke logins">
        {null}
      </Can>
      <ErrorNote error={grant.error ?? revoke.error ?? removeUsername.error} />
      {target.principals.length === 0 && (
        <Empty>No username yet: add the Unix account people log in as.</Empty>
      )}
      {target.principals.map((p) => (
        <div key={p.id} className="principal">
          <h3>
            as <code>{p.username}</code>
          </h3>
          <ul>
            {p.userIds.map((id) => (
              <li key={id}>
                {names.get(id) ?? id}{" "}
                <Can access={access} need="principals.manage" doing="" quiet>
                  <ConfirmButton
                    className="link"
                    label={`Revoke ${names.get(id) ?? id} as ${p.username}`}
                    question={`Revoke ${names.get(id) ?? id}'s login to ${target.name} as ${p.username}?`}
                    confirm={`Yes, revoke ${names.get(id) ?? id} as ${p.username}`}
                    onConfirm={() => revoke.act(p.id, id)}
                  />
                </Can>
                <LimitsOf principal={p} subjectId={id} who={names.get(id) ?? id} />
              </li>
            ))}
            {p.teamIds.map((id) => (
              <li key={id}>team {id}</li>
            ))}
            {p.serviceAccountIds.map((id) => (
              <li key={id}>
                service account {id} <LimitsOf principal={p} subjectId={id} who={`service account ${id}`} />
              </li>
            ))}
          </ul>
          <Can access={access} need="principals.manage" doing="" quiet>
            <div className="row">
              <ChooseAndApply
                label={`Member to log in to ${target.name} as ${p.username}`}
                options={memberOptions}
                apply={`Grant login as ${p.username}`}
                onApply={(userId) => grant.act(p.id, userId)}
              />
              <ConfirmButton
                label={`Remove username ${p.username}`}
                question={`Remove ${p.username} from ${target.name}? Everyone granted it loses that login.`}
                confirm={`Yes, remove ${p.username}`}
                onConfirm={() => removeUsername.act(p.username)}
              />
            </div>
          </Can>
        </div>
      ))}
      <Can access={access} need="principals.manage" doing="" quiet>
        <ActionForm action={addUsername} submit="Add username">
          <Field
            label="Unix username"
            name="username"
            required
            pattern="[a-z_][a-z0-9\-_]*\$?"
            title="A Unix login name: a lower-case letter or _, then lower-case letters, digits, - and _, optionally a final $"
            maxLength={32}
          />
        </ActionForm>
      </Can>
      {grant.result && <Notice>Granted. The daemon learns it at once.</Notice>}
    </Section>
  );
}
