/** The audit log: a paged, filterable table, and an export to CSV or JSON. */
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { useQuery } from "@connectrpc/connect-query";
import { type EventLog, ExportAuditLogsRequest_Format, UtilService, WorkspaceService } from "@wap/api";
import { useState } from "react";
import { Can, useAccess } from "../access";
import { api, when } from "../api";
import { download, Empty, ErrorNote, Field, Page, QueryState, Select, Table, useAction } from "../ui";
import { Pager } from "./sessions";
import { useWs } from "./workspace";

const pageSize = 50;

function dateBound(value: string, endOfDay: boolean) {
  if (!value) return undefined;
  const date = new Date(`${value}T${endOfDay ? "23:59:59.999" : "00:00:00"}`);
  return Number.isNaN(date.getTime()) ? undefined : timestampFromDate(date);
}

export function AuditPage() {
  const ws = useWs();
  const access = useAccess(ws);
  if (access.ready && !access.can("audit.read")) {
    return (
      <Page title="Audit log">
        <Can access={access} need="audit.read" doing="read the audit log">
          {null}
        </Can>
      </Page>
    );
  }
  return <AuditLog ws={ws} />;
}

/** Kinds whose name in words is not their prefix's. */
const kindWords: Readonly<Record<string, string>> = {
  user: "person",
  member: "person",
  principal: "login",
  session: "terminal session",
  recording: "session recording",
};

/** What kind of thing a resource is, from its prefix ("target:…"), in words. */
function resourceKind(resource: string): string {
  const kind = resource.slice(0, Math.max(0, resource.indexOf(":")));
  return kindWords[kind] ?? (kind.replaceAll("_", " ") || resource);
}

/** A resource without a name: its kind and the start of its id ("terminal session 01a222cc"). */
function unnamed(resource: string): string {
  const at = resource.indexOf(":");
  return at < 0 ? resource : `${resourceKind(resource)} ${resource.slice(at + 1, at + 9)}`;
}

function AuditLog({ ws }: { ws: string }) {
  const [search, setSearch] = useState("");
  const [actor, setActor] = useState("");
  const [action, setAction] = useState("");
  const [resource, setResource] = useState("");
  const [from, setFrom] = useState("");
  const [to, setTo] = useState("");
  const [offset, setOffset] = useState(0);
  // Names of actors picked from the table who are not members (service accounts, daemons).
  const [picked, setPicked] = useState<ReadonlyMap<string, string>>(new Map());
  const members = useQuery(WorkspaceService.method.listWorkspaceMembers, { workspaceId: ws, limit: 100 });
  const startDate = dateBound(from, false);
  const endDate = dateBound(to, true);
  const logs = useQuery(UtilService.method.listAuditLogs, {
    workspaceId: ws,
    limit: pageSize,
    offset,
    search,
    actorIds: actor ? [actor] : [],
    actions: action.trim() ? [action.trim()] : [],
    resources: resource.trim() ? [resource.trim()] : [],
    startDate,
    endDate,
  });
  const exportLogs = useAction(async (format: ExportAuditLogsRequest_Format) => {
    const file = await api.util.exportAuditLogs({ workspaceId: ws, format, startDate, endDate });
    download(file.data as BlobPart, file.filename, file.contentType);
  });
  const set = (setter: (v: string) => void) => (value: string) => {
    setter(value);
    setOffset(0);
  };
  const filter = (setter: (v: string) => void) => (e: React.ChangeEvent<HTMLInputElement>) =>
    set(setter)(e.target.value);
  const actors = new Map<string, string>(picked);
  for (const m of members.data?.members ?? []) actors.set(m.id, `${m.name} (${m.email})`);
  const pickActor = (log: EventLog) => {
    if (!actors.has(log.actorId)) {
      setPicked(
        new Map(picked).set(log.actorId, log.actorName || `${log.actorType} ${log.actorId.slice(0, 8)}`),
      );
    }
    set(setActor)(log.actorId);
  };
  return (
    <Page
      title="Audit log"
      actions={
        <div className="row">
          <button
            type="button"
            className="secondary"
            onClick={() => void exportLogs.act(ExportAuditLogsRequest_Format.CSV)}
          >
            Export CSV
          </button>
          <button
            type="button"
            className="secondary"
            onClick={() => void exportLogs.act(ExportAuditLogsRequest_Format.JSON)}
          >
            Export JSON
          </button>
        </div>
      }
    >
      <ErrorNote error={exportLogs.error} />
      <form className="filters" aria-label="Filter the audit log" onSubmit={(e) => e.preventDefault()}>
        <Field label="Search" type="search" value={search} onChange={filter(setSearch)} />
        <Select
          label="Actor"
          value={actor}
          onChange={(e) => set(setActor)(e.target.value)}
          options={[["", "Anyone"], ...actors]}
        />
        <Field label="Action" value={action} onChange={filter(setAction)} placeholder="e.g. target.create" />
        <Field
          label="Resource"
          value={resource}
          onChange={filter(setResource)}
          hint="Pick one in the table, or type kind:id."
        />
        <Field label="From" type="date" value={from} onChange={filter(setFrom)} />
        <Field label="To" type="date" value={to} onChange={filter(setTo)} />
      </form>
      {(actor || action || resource) && (
        <button
          type="button"
          className="link"
          onClick={() => {
            setActor("");
            setAction("");
            setResource("");
            setOffset(0);
          }}
        >
          Clear the actor, action and resource filters
        </button>
      )}
      <QueryState
        query={logs}
        empty={(d) => (d.logs.length === 0 ? <Empty>No event matches.</Empty> : undefined)}
      >
        {(d) => (
          <>
            <Table caption="Audit events" head={["Time", "Actor", "Action", "Resource", "Status", "Address"]}>
              {d.logs.map((log) => (
                <tr key={log.id}>
                  <td>{when(log.timestamp)}</td>
                  <td>
                    {log.actorName ? (
                      <>
                        <button
                          type="button"
                          className="link"
                          onClick={() => pickActor(log)}
                          title="Show only this actor"
                        >
                          {log.actorName}
                        </button>
                        <div className="muted">{log.actorEmail || log.actorType.replaceAll("_", " ")}</div>
                      </>
                    ) : log.actorId ? (
                      <button type="button" className="link" onClick={() => pickActor(log)}>
                        {log.actorType} {log.actorId.slice(0, 8)}
                      </button>
                    ) : (
                      log.actorType
                    )}
                  </td>
                  <td>
                    <button
                      type="button"
                      className="link"
                      onClick={() => set(setAction)(log.action)}
                      title="Show only this action"
                    >
                      {log.action}
                    </button>
                  </td>
                  <td>
                    {log.resource && (
                      <>
                        <button
                          type="button"
                          className="link"
                          onClick={() => set(setResource)(log.resource)}
                          title={`Show only ${log.resource}`}
                        >
                          {log.resourceName || unnamed(log.resource)}
                        </button>
                        {log.resourceName && <div className="muted">{resourceKind(log.resource)}</div>}
                      </>
                    )}
                  </td>
                  <td>{log.statusCode}</td>
                  <td>{log.ipAddress}</td>
                </tr>
              ))}
            </Table>
            <Pager offset={offset} limit={pageSize} total={d.total} onChange={setOffset} />
          </>
        )}
      </QueryState>
    </Page>
  );
}
