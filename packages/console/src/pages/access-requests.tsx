/**
 * Just-in-time access: the requests the signed-in person may decide (approve or deny, each with
 * a reason and an in-page confirmation naming who gets what), a form to ask for a login held on
 * request, and every request they can see with its state and history. What each person may do
 * with a request is the server's answer (`callerMayDecide`, `callerMayWithdraw`), worked out
 * from the grant's policy as the decision itself is: the page only shows it.
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { createConnectQueryKey, useQuery } from "@connectrpc/connect-query";
import { useQueryClient } from "@tanstack/react-query";
import { Navigate, useSearch } from "@tanstack/react-router";
import {
  type AccessRequest,
  AccessRequestEventType,
  AccessRequestService,
  AccessRequestState,
  GrantKind,
  PrincipalType,
  TargetService,
  WorkspaceService,
} from "@wap/api";
import { useEffect, useId, useState } from "react";
import { Can, useAccess } from "../access";
import { api, when } from "../api";
import { useMe } from "../session";
import {
  ActionForm,
  ConfirmButton,
  Empty,
  ErrorNote,
  Field,
  Page,
  QueryState,
  Section,
  Select,
  text,
  useAction,
} from "../ui";
import { useWs } from "./workspace";

/** The workspace events of access requests (their audit actions): each changes what is shown. */
const requestEvents = ["create", "approval", "approve", "deny", "expire", "withdraw", "use", "end"].map(
  (action) => `access_request.${action}`,
);

/**
 * Keeps every access-request query current from the workspace event stream (a request made,
 * approved, denied, withdrawn, expired or ended by anyone refetches them); no polling. The stream
 * reconnects after a pause if it breaks.
 */
export function useAccessRequestEvents(ws: string | undefined) {
  const queryClient = useQueryClient();
  useEffect(() => {
    if (!ws) return;
    const abort = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const refetch = () =>
      Promise.all([
        queryClient.invalidateQueries({
          queryKey: createConnectQueryKey({ schema: AccessRequestService, cardinality: undefined }),
        }),
        // An approval or its end changes the logins the person may use.
        queryClient.invalidateQueries({
          queryKey: createConnectQueryKey({
            schema: TargetService.method.getSubjectAccess,
            cardinality: undefined,
          }),
        }),
      ]);
    let reconnect = false;
    const run = async () => {
      try {
        const stream = api.workspaces.subscribeWorkspaceEvents(
          { workspaceId: ws, eventTypes: requestEvents },
          { signal: abort.signal },
        );
        // Whatever happened while the stream was down is read again.
        if (reconnect) await refetch();
        reconnect = true;
        for await (const _event of stream) await refetch();
      } catch {
        // Broken or refused: try again shortly unless the page is gone.
      }
      if (!abort.signal.aborted) timer = setTimeout(() => void run(), 5_000);
    };
    void run();
    return () => {
      abort.abort();
      clearTimeout(timer);
    };
  }, [ws, queryClient]);
}

/** The pending requests the signed-in person may approve or deny in `ws`. */
export function usePendingDecisions(ws: string | undefined, enabled = true): AccessRequest[] {
  const pending = useQuery(
    AccessRequestService.method.listAccessRequests,
    { workspaceId: ws ?? "", state: AccessRequestState.PENDING, limit: 100 },
    { enabled: enabled && !!ws },
  );
  return (pending.data?.requests ?? []).filter((r) => r.callerMayDecide);
}

/** The count beside the navigation's link, said in words to a screen reader. */
export function DecisionsBadge({ count }: { count: number }) {
  if (count === 0) return null;
  return (
    <>
      {" "}
      <span className="badge count" data-testid="decisions-badge">
        {count}
        <span className="visually-hidden"> waiting for your decision</span>
      </span>
    </>
  );
}

/** "1 hour 30 minutes", "45 seconds". */
export function spokenDuration(seconds: number): string {
  const units = [
    [86_400, "day"],
    [3600, "hour"],
    [60, "minute"],
    [1, "second"],
  ] as const;
  const parts: string[] = [];
  let left = Math.max(0, Math.round(seconds));
  for (const [size, name] of units) {
    const n = Math.floor(left / size);
    left -= n * size;
    if (n > 0) parts.push(`${n} ${name}${n === 1 ? "" : "s"}`);
  }
  return parts.length === 0 ? "0 seconds" : parts.slice(0, 2).join(" ");
}

const stateName: Record<AccessRequestState, string> = {
  [AccessRequestState.UNSPECIFIED]: "unknown",
  [AccessRequestState.PENDING]: "pending",
  [AccessRequestState.APPROVED]: "approved",
  [AccessRequestState.DENIED]: "denied",
  [AccessRequestState.EXPIRED]: "expired",
  [AccessRequestState.WITHDRAWN]: "withdrawn",
  [AccessRequestState.ENDED]: "ended",
};

const eventWord: Record<AccessRequestEventType, string> = {
  [AccessRequestEventType.UNSPECIFIED]: "Changed",
  [AccessRequestEventType.REQUESTED]: "Requested",
  [AccessRequestEventType.APPROVAL]: "Approval",
  [AccessRequestEventType.APPROVED]: "Approved",
  [AccessRequestEventType.DENIED]: "Denied",
  [AccessRequestEventType.EXPIRED]: "Expired undecided",
  [AccessRequestEventType.WITHDRAWN]: "Withdrawn",
  [AccessRequestEventType.USED]: "Used: a certificate was issued under it",
  [AccessRequestEventType.ENDED]: "Ended: its window passed",
};

/** Names for the ids a request carries: members by name and email, targets by name. */
function useNames(ws: string) {
  const members = useQuery(WorkspaceService.method.listWorkspaceMembers, { workspaceId: ws, limit: 100 });
  const targets = useQuery(TargetService.method.listTargets, { workspaceId: ws, limit: 100 });
  const people = new Map((members.data?.members ?? []).map((m) => [m.id, m] as const));
  const places = new Map((targets.data?.targets ?? []).map((t) => [t.id, t.name] as const));
  return {
    person: (id: string) => people.get(id)?.name ?? `user ${id.slice(0, 8)}`,
    personWithEmail: (id: string) => {
      const m = people.get(id);
      return m ? `${m.name} (${m.email})` : `user ${id.slice(0, 8)}`;
    },
    target: (id: string) => places.get(id) ?? `target ${id.slice(0, 8)}`,
  };
}
type Names = ReturnType<typeof useNames>;

const seconds = (r: AccessRequest) => Number(r.duration?.seconds ?? 0n);

/** "ubuntu on web-1 for 30 minutes". */
const what = (r: AccessRequest, names: Names) =>
  `${r.login} on ${names.target(r.targetId)} for ${spokenDuration(seconds(r))}`;

function stateText(r: AccessRequest): string {
  switch (r.state) {
    case AccessRequestState.PENDING:
      return `pending: ${r.approverIds.length} of ${r.approvalsRequired} approvals, decide by ${when(r.decideBy)}`;
    case AccessRequestState.APPROVED:
      return `approved until ${when(r.endsAt)}`;
    default:
      return stateName[r.state];
  }
}

function History({ request, names }: { request: AccessRequest; names: Names }) {
  return (
    <ol className="history" aria-label="History">
      {request.events.map((e, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: transitions are only ever appended.
        <li key={i}>
          <span>{eventWord[e.type]}</span>
          {e.actorId ? ` by ${names.person(e.actorId)}` : " by the platform"}
          {e.type === AccessRequestEventType.APPROVED && request.endsAt
            ? ` until ${when(request.endsAt)}`
            : ""}
          {", "}
          <span className="muted">{when(e.at)}</span>
          {e.reason ? <q>{e.reason}</q> : null}
        </li>
      ))}
    </ol>
  );
}

/** One request waiting for the caller: its facts, a reason, Approve and Deny (each confirmed). */
function Decision({ ws, request, names }: { ws: string; request: AccessRequest; names: Names }) {
  const [reason, setReason] = useState("");
  const decide = useAction(async (approve: boolean) => {
    const call = { workspaceId: ws, id: request.id, reason };
    const { request: decided } = approve
      ? await api.accessRequests.approveAccessRequest(call)
      : await api.accessRequests.denyAccessRequest(call);
    return decided;
  });
  const who = names.person(request.requesterId);
  const row = `${who} as ${request.login} on ${names.target(request.targetId)}`;
  const still = request.approvalsRequired - request.approverIds.length;
  return (
    <li aria-label={`Request of ${row}`}>
      <p>
        <strong>{names.personWithEmail(request.requesterId)}</strong> asks to log in as{" "}
        <strong>{what(request, names)}</strong>
        {request.reason ? (
          <>
            : <q>{request.reason}</q>
          </>
        ) : (
          " (no reason given)"
        )}
      </p>
      <p className="muted">
        Asked {when(request.createdAt)}; expires undecided {when(request.decideBy)}.{" "}
        {still > 1 ? `${still} more approvals needed.` : ""}
      </p>
      <Field
        label={`Reason for your decision on ${row}`}
        value={reason}
        maxLength={1000}
        onChange={(e) => setReason(e.target.value)}
        hint="Kept on the request and in the audit log."
      />
      <div className="row">
        <ConfirmButton
          className=""
          label={`Approve ${row}`}
          question={
            still > 1
              ? `Approve ${who}'s request to log in as ${what(request, names)}? ${still - 1} more approval${still - 1 === 1 ? " is" : "s are"} needed after yours.`
              : `Let ${who} log in as ${what(request, names)}, from now?`
          }
          confirm={`Yes, approve ${row}`}
          disabled={decide.busy}
          onConfirm={() => decide.act(true)}
        />
        <ConfirmButton
          label={`Deny ${row}`}
          question={`Refuse ${who} the login as ${what(request, names)}? A denied request cannot be approved later.`}
          confirm={`Yes, deny ${row}`}
          disabled={decide.busy}
          onConfirm={() => decide.act(false)}
        />
      </div>
      <ErrorNote error={decide.error} />
    </li>
  );
}

/** One request the caller can see: who, what, its state, its history, and Withdraw when allowed. */
function RequestItem({
  ws,
  request,
  names,
  highlighted,
}: {
  ws: string;
  request: AccessRequest;
  names: Names;
  highlighted: boolean;
}) {
  const withdraw = useAction(() =>
    api.accessRequests.withdrawAccessRequest({ workspaceId: ws, id: request.id, reason: "" }),
  );
  const who = names.person(request.requesterId);
  const row = `${who} as ${request.login} on ${names.target(request.targetId)}`;
  const headingId = useId();
  return (
    <li
      aria-labelledby={headingId}
      aria-current={highlighted ? "true" : undefined}
      data-state={stateName[request.state]}
    >
      <h3 id={headingId}>
        {who}: {what(request, names)}
      </h3>
      <p>
        <span className="badge">{stateName[request.state]}</span> <span>{stateText(request)}</span>
      </p>
      <History request={request} names={names} />
      {request.callerMayWithdraw && (
        <ConfirmButton
          label={`Withdraw ${row}`}
          question={
            request.state === AccessRequestState.APPROVED
              ? `End ${who}'s access as ${request.login} on ${names.target(request.targetId)} now? The certificates issued under it are revoked.`
              : `Withdraw ${who}'s request for ${request.login} on ${names.target(request.targetId)}?`
          }
          confirm={`Yes, withdraw ${row}`}
          disabled={withdraw.busy}
          onConfirm={() => withdraw.act()}
        />
      )}
      <ErrorNote error={withdraw.error} />
    </li>
  );
}

/** The logins the caller holds only on request, by target, with the policy of the grant used. */
function useRequestable(ws: string) {
  const access = useQuery(TargetService.method.getSubjectAccess, { workspaceId: ws });
  const me = useMe().user?.id;
  const now = Date.now();
  return (access.data?.targets ?? []).flatMap((target) =>
    target.principals.flatMap((p) => {
      const usable = p.grants.some(
        (g) =>
          g.kind === GrantKind.STANDING ||
          g.kind === GrantKind.UNSPECIFIED ||
          (g.kind === GrantKind.TIME_BOUND && g.validUntil && timestampDate(g.validUntil).getTime() > now),
      );
      const onRequest = p.grants.filter((g) => g.kind === GrantKind.ON_REQUEST && g.approval);
      // The server asks under a grant to the person first, then one through a team.
      const grant =
        onRequest.find((g) => g.type === PrincipalType.USER && g.subjectId === me) ?? onRequest[0];
      if (usable || !grant?.approval) return [];
      return [{ target, login: p.username, policy: grant.approval }];
    }),
  );
}

function AskForm({ ws }: { ws: string }) {
  const choices = useRequestable(ws);
  const [choice, setChoice] = useState("");
  const chosen = choices.find((c) => `${c.target.id}/${c.login}` === choice) ?? choices[0];
  const maxMinutes = Math.floor(Number(chosen?.policy.maxDuration?.seconds ?? 0n) / 60);
  const ask = useAction((form: FormData) =>
    api.accessRequests.createAccessRequest({
      workspaceId: ws,
      targetId: chosen!.target.id,
      login: chosen!.login,
      duration: { seconds: BigInt(Math.round(Number(text(form, "minutes")) * 60)), nanos: 0 },
      reason: text(form, "reason"),
    }),
  );
  if (choices.length === 0) {
    return <Empty>You hold no login that needs an approval: there is nothing to ask for.</Empty>;
  }
  const approvers = chosen
    ? [
        ...chosen.policy.approverRoles.map((r) => `${r}s`),
        ...(chosen.policy.approverTeamIds.length > 0 ? ["members of the approving teams"] : []),
      ].join(", ")
    : "";
  return (
    <ActionForm action={ask} submit="Ask for access" label="Ask for access">
      <Select
        label="Login and target"
        name="choice"
        options={choices.map((c) => [`${c.target.id}/${c.login}`, `${c.login} on ${c.target.name}`] as const)}
        value={chosen ? `${chosen.target.id}/${chosen.login}` : ""}
        onChange={(e) => setChoice(e.target.value)}
      />
      <Field
        label="Duration in minutes"
        name="minutes"
        type="number"
        min={1}
        max={maxMinutes}
        step={1}
        defaultValue={Math.min(60, maxMinutes)}
        required
        hint={`At most ${spokenDuration(maxMinutes * 60)}, the grant's maximum. Access lasts this long from the approval.`}
      />
      <Field
        label={chosen?.policy.reasonRequired ? "Reason (required)" : "Reason"}
        name="reason"
        maxLength={1000}
        required={chosen?.policy.reasonRequired ?? false}
        hint={`Approvers (${approvers}) read it; ${chosen?.policy.approvalsRequired ?? 1} approval${(chosen?.policy.approvalsRequired ?? 1) === 1 ? " is" : "s are"} needed.`}
      />
      {ask.result?.request && (
        <p role="status" className="notice">
          Asked: request for {ask.result.request.login} is pending. Approvers are told now.
        </p>
      )}
    </ActionForm>
  );
}

export function AccessRequestsPage() {
  const ws = useWs();
  const search = useSearch({ strict: false }) as { request?: string };
  const names = useNames(ws);
  const all = useQuery(AccessRequestService.method.listAccessRequests, { workspaceId: ws, limit: 100 });
  const access = useAccess(ws);
  // The role table says whether the role may decide at all; each request says whether its
  // policy lets this person decide it.
  const waiting = usePendingDecisions(ws).filter(() => access.can("access_requests.decide"));
  return (
    <Page title="Access requests">
      <Section title="Waiting for your decision">
        {waiting.length === 0 ? (
          <Empty>No request is waiting for your decision.</Empty>
        ) : (
          <ul className="cards" aria-label="Waiting for your decision">
            {waiting.map((r) => (
              <Decision key={r.id} ws={ws} request={r} names={names} />
            ))}
          </ul>
        )}
      </Section>
      <Section title="Ask for access">
        <Can access={access} need="access_requests.create" doing="ask for access">
          <AskForm ws={ws} />
        </Can>
      </Section>
      <Section title="Requests">
        <QueryState
          query={all}
          empty={(d) => (d.requests.length === 0 ? <Empty>No access request yet.</Empty> : undefined)}
        >
          {(d) => (
            <ul className="cards" aria-label="Requests">
              {d.requests.map((r) => (
                <RequestItem
                  key={r.id}
                  ws={ws}
                  request={r}
                  names={names}
                  highlighted={r.id === search.request}
                />
              ))}
            </ul>
          )}
        </QueryState>
      </Section>
    </Page>
  );
}

/** The mailed link (`/access-requests?workspace=…&request=…`) opens the workspace's page. */
export function AccessRequestLinkPage() {
  const search = useSearch({ strict: false }) as { workspace?: string; request?: string };
  if (!search.workspace) return <Navigate to="/" replace />;
  return (
    <Navigate
      to="/w/$ws/access-requests"
      params={{ ws: search.workspace }}
      search={search.request ? { request: search.request } : {}}
      replace
    />
  );
}
