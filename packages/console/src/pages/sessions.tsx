/** Open a terminal to a target, list and close open sessions, and recordings. */
import { useQuery } from "@connectrpc/connect-query";
import { Link, useNavigate, useParams } from "@tanstack/react-router";
import {
  DaemonService,
  DaemonStatus,
  RecordingService,
  type Session,
  SessionKind,
  TargetService,
} from "@wap/api";
import { lazy, Suspense, useState } from "react";
import { Can, useAccess } from "../access";
import { api, when } from "../api";
import { recordingText } from "../recordings";
import {
  ActionForm,
  ConfirmButton,
  download,
  Empty,
  ErrorNote,
  Loading,
  Page,
  QueryState,
  Section,
  Select,
  Table,
  text,
  useAction,
} from "../ui";
import { Online } from "./targets";
import { useWs } from "./workspace";

// xterm and the player are loaded only on the pages that show them.
const Terminal = lazy(() => import("../terminal"));
const Player = lazy(() => import("../player"));
const Watch = lazy(() => import("../watch"));

export function SessionsPage() {
  const ws = useWs();
  const navigate = useNavigate();
  const targets = useQuery(TargetService.method.listTargets, { workspaceId: ws, limit: 100 });
  const daemons = useQuery(DaemonService.method.listDaemons, { workspaceId: ws, limit: 100 });
  const ready = (targets.data?.targets ?? []).filter((t) =>
    daemons.data?.daemons.some((d) => d.id === t.daemonId && d.status === DaemonStatus.ACCEPTED),
  );
  const [targetId, setTargetId] = useState("");
  const target = ready.find((t) => t.id === targetId) ?? ready[0];
  const open = useAction(async (form: FormData) => {
    const { session } = await api.daemons.createSession({
      workspaceId: ws,
      daemonId: target!.daemonId,
      username: text(form, "username"),
    });
    await navigate({
      to: "/w/$ws/terminal/$daemon/$session",
      params: { ws, daemon: target!.daemonId, session: session!.sessionId },
    });
  });
  return (
    <Page title="Sessions">
      <Section title="Open a terminal">
        {ready.length === 0 ? (
          <Empty>No target has an accepted daemon yet.</Empty>
        ) : (
          <ActionForm action={open} submit="Open terminal">
            <Select
              label="Target"
              name="target"
              value={target?.id}
              onChange={(e) => setTargetId(e.target.value)}
              options={ready.map((t) => [t.id, t.name] as const)}
            />
            <Select
              label="Log in as"
              name="username"
              options={(target?.principals ?? []).map((p) => [p.username, p.username] as const)}
            />
          </ActionForm>
        )}
      </Section>
      <h2>Open sessions</h2>
      {(daemons.data?.daemons ?? [])
        .filter((d) => d.status === DaemonStatus.ACCEPTED)
        .map((d) => (
          <DaemonSessions
            key={d.id}
            daemonId={d.id}
            name={d.name}
            online={d.online}
            recording={d.config?.recordSessions ?? false}
          />
        ))}
    </Page>
  );
}

/** What a session is, in words: a browser terminal, or an SSH login and what it runs. */
function sessionKind(kind: string, command: string): string {
  switch (kind) {
    case "terminal":
      return "browser terminal";
    case "shell":
      return "ssh";
    case "exec":
      return `ssh: ${command}`;
    case "subsystem":
      return command || "ssh subsystem";
    default:
      return kind;
  }
}

const kindNames: Partial<Record<SessionKind, string>> = {
  [SessionKind.TERMINAL]: "terminal",
  [SessionKind.SHELL]: "shell",
  [SessionKind.EXEC]: "exec",
  [SessionKind.SUBSYSTEM]: "subsystem",
};

const isSshLogin = (s: Session) =>
  s.kind === SessionKind.SHELL || s.kind === SessionKind.EXEC || s.kind === SessionKind.SUBSYSTEM;

/** "3 min" from a start and an end (or now). */
function duration(start?: { seconds: bigint }, end?: { seconds: bigint }): string {
  if (!start) return "";
  const seconds = Number((end?.seconds ?? BigInt(Math.floor(Date.now() / 1000))) - start.seconds);
  if (seconds < 60) return `${Math.max(0, seconds)} s`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min`;
  return `${(seconds / 3600).toFixed(1)} h`;
}

function DaemonSessions({
  daemonId,
  name,
  online,
  recording,
}: {
  daemonId: string;
  name: string;
  online: boolean;
  /** Whether the daemon records sessions now: only recorded logins can be watched. */
  recording: boolean;
}) {
  const ws = useWs();
  const access = useAccess(ws);
  const [watching, setWatching] = useState<Session>();
  const sessions = useQuery(DaemonService.method.listSessions, { workspaceId: ws, daemonId });
  const close = useAction((sessionId: string) =>
    api.daemons.closeSession({ workspaceId: ws, daemonId, sessionId }),
  );
  return (
    <Section title={`On ${name}`}>
      <Online online={online} />
      <ErrorNote error={close.error} />
      <QueryState
        query={sessions}
        empty={(d) => (d.sessions.length === 0 ? <Empty>No open session.</Empty> : undefined)}
      >
        {(d) => (
          <Table caption={`Sessions on ${name}`} head={["Session", "Who", "As", "What", "From", "Since", ""]}>
            {d.sessions.map((s) => (
              <tr key={s.sessionId}>
                <td>
                  {isSshLogin(s) ? (
                    s.sessionId.slice(0, 8)
                  ) : (
                    <Link
                      to="/w/$ws/terminal/$daemon/$session"
                      params={{ ws, daemon: daemonId, session: s.sessionId }}
                    >
                      {s.sessionId.slice(0, 8)}
                    </Link>
                  )}
                </td>
                <td>{s.subjectName || s.userId.slice(0, 8)}</td>
                <td>{s.username}</td>
                <td>{sessionKind(kindNames[s.kind ?? SessionKind.TERMINAL] ?? "terminal", s.command)}</td>
                <td>{s.clientAddress}</td>
                <td>{s.startedAt ? `${duration(s.startedAt)} ago` : ""}</td>
                <td className="row">
                  {isSshLogin(s) && recording && (
                    <Can access={access} need="sessions.manage" doing="" quiet>
                      <Can access={access} need="recordings.read" doing="" quiet>
                        <button type="button" className="secondary" onClick={() => setWatching(s)}>
                          Watch session {s.sessionId.slice(0, 8)}
                        </button>
                      </Can>
                    </Can>
                  )}
                  <ConfirmButton
                    label={`Close session ${s.sessionId.slice(0, 8)}`}
                    question={`Close session ${s.sessionId.slice(0, 8)} as ${s.username} on ${name}? Its shell and every program it started end.`}
                    confirm={`Yes, close session ${s.sessionId.slice(0, 8)}`}
                    onConfirm={() => close.act(s.sessionId)}
                  />
                </td>
              </tr>
            ))}
          </Table>
        )}
      </QueryState>
      {watching && (
        <Section
          title={`Watching ${watching.subjectName || watching.userId.slice(0, 8)} as ${watching.username} on ${name}`}
        >
          <button type="button" className="secondary" onClick={() => setWatching(undefined)}>
            Stop watching
          </button>
          <Suspense fallback={<Loading what="Loading the terminal" />}>
            <Watch key={watching.sessionId} workspaceId={ws} sessionId={watching.sessionId} />
          </Suspense>
        </Section>
      )}
    </Section>
  );
}

export function TerminalPage() {
  const { ws, daemon, session } = useParams({ strict: false }) as {
    ws: string;
    daemon: string;
    session: string;
  };
  const close = useAction(() =>
    api.daemons.closeSession({ workspaceId: ws, daemonId: daemon, sessionId: session }),
  );
  // Who and where, remembered once seen: the session leaves the list when it ends.
  const live = useQuery(DaemonService.method.listSessions, { workspaceId: ws, daemonId: daemon });
  const [named, setNamed] = useState<string>();
  const found = live.data?.sessions.find((s) => s.sessionId === session);
  if (found && named === undefined) setNamed(`${found.username} on ${live.data?.daemonName || "the daemon"}`);
  return (
    <Page
      title={named ? `Terminal: ${named}` : "Terminal"}
      actions={
        <div className="row">
          <ConfirmButton
            label="Close session"
            question={`Close this session${named ? ` as ${named}` : ""}? Its shell and every program it started end.`}
            confirm="Yes, close the session"
            onConfirm={() => close.act()}
          />
          <Link to="/w/$ws/sessions" params={{ ws }}>
            Back to sessions
          </Link>
        </div>
      }
    >
      <ErrorNote error={close.error} />
      <Suspense fallback={<Loading what="Loading the terminal" />}>
        <Terminal workspaceId={ws} sessionId={session} />
      </Suspense>
    </Page>
  );
}

export function RecordingsPage() {
  const ws = useWs();
  const [offset, setOffset] = useState(0);
  const recordings = useQuery(RecordingService.method.listRecordings, { workspaceId: ws, limit: 25, offset });
  const access = useAccess(ws);
  const remove = useAction((recordingId: string) =>
    api.recordings.deleteRecording({ workspaceId: ws, recordingId }),
  );
  const [playing, setPlaying] = useState<string>();
  return (
    <Page title="Recordings">
      <ErrorNote error={remove.error} />
      <QueryState
        query={recordings}
        empty={(d) =>
          d.recordings.length === 0 ? (
            <Empty>No recording yet: turn recording on for a daemon.</Empty>
          ) : undefined
        }
      >
        {(d) => (
          <>
            <Table
              caption="Recordings"
              head={["Started", "Who", "Where", "As", "What", "How long", "Size", "State", ""]}
            >
              {d.recordings.map((r) => (
                <tr key={r.id}>
                  <td>{when(r.startedAt)}</td>
                  <td>{r.subjectName || r.userId.slice(0, 8)}</td>
                  <td>{r.daemonName || r.daemonId.slice(0, 8)}</td>
                  <td>{r.username}</td>
                  <td>
                    {sessionKind(r.kind || "terminal", r.command)}
                    {r.clientAddress ? ` from ${r.clientAddress}` : ""}
                  </td>
                  <td>{r.endedAt ? duration(r.startedAt, r.endedAt) : ""}</td>
                  <td>{(Number(r.sizeBytes) / 1024).toFixed(1)} KiB</td>
                  <td>{r.complete ? "complete" : "running"}</td>
                  <td className="row">
                    <button type="button" onClick={() => setPlaying(r.id)}>
                      Play recording {r.id.slice(0, 8)}
                    </button>
                    <button
                      type="button"
                      className="secondary"
                      onClick={() => void downloadRecording(ws, r.id)}
                    >
                      Download recording {r.id.slice(0, 8)} (.cast)
                    </button>
                    <Can access={access} need="recordings.delete" doing="" quiet>
                      <ConfirmButton
                        label={`Delete recording ${r.id.slice(0, 8)}`}
                        question={`Delete the recording of ${r.username}'s session started ${when(r.startedAt)}? It cannot be played again.`}
                        confirm={`Yes, delete recording ${r.id.slice(0, 8)}`}
                        onConfirm={() => remove.act(r.id)}
                      />
                    </Can>
                  </td>
                </tr>
              ))}
            </Table>
            <Pager offset={offset} limit={25} total={d.total} onChange={setOffset} />
          </>
        )}
      </QueryState>
      {playing && (
        <Section title="Playback">
          <Suspense fallback={<Loading what="Loading the player" />}>
            <Player key={playing} workspaceId={ws} recordingId={playing} />
          </Suspense>
        </Section>
      )}
    </Page>
  );
}

async function downloadRecording(workspaceId: string, recordingId: string) {
  download(await recordingText(workspaceId, recordingId), `${recordingId}.cast`, "application/x-asciicast");
}

export function Pager({
  offset,
  limit,
  total,
  onChange,
}: {
  offset: number;
  limit: number;
  total: number;
  onChange: (offset: number) => void;
}) {
  return (
    <nav className="row pager" aria-label="Pages">
      <button
        type="button"
        className="secondary"
        disabled={offset === 0}
        onClick={() => onChange(Math.max(0, offset - limit))}
      >
        Previous
      </button>
      <span>
        {total === 0 ? 0 : offset + 1}–{Math.min(offset + limit, total)} of {total}
      </span>
      <button
        type="button"
        className="secondary"
        disabled={offset + limit >= total}
        onClick={() => onChange(offset + limit)}
      >
        Next
      </button>
    </nav>
  );
}
