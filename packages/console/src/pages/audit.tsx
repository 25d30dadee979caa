/** The audit log: a paged, filterable table, and an export to CSV or JSON. */
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { useQuery } from "@connectrpc/connect-query";
import { ExportAuditLogsRequest_Format, UtilService } from "@wap/api";
import { useState } from "react";
import { Can, useAccess } from "../access";
import { api, when } from "../api";
import { download, Empty, ErrorNote, Field, Page, QueryState, Table, useAction } from "../ui";
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

function AuditLog({ ws }: { ws: string }) {
  const [search, setSearch] = useState("");
  const [actor, setActor] = useState("");
  const [action, setAction] = useState("");
  const [from, setFrom] = useState("");
  const [to, setTo] = useState("");
  const [offset, setOffset] = useState(0);
  const startDate = dateBound(from, false);
  const endDate = dateBound(to, true);
  const actorIds = /^[0-9a-f-]{36}$/i.test(actor.trim()) ? [actor.trim()] : [];
  const logs = useQuery(UtilService.method.listAuditLogs, {
    workspaceId: ws,
    limit: pageSize,
    offset,
    search,
    actorIds,
    actions: action ? [action.trim()] : [],
    startDate,
    endDate,
  });
  const exportLogs = useAction(async (format: ExportAuditLogsRequest_Format) => {
    const file = await api.util.exportAuditLogs({ workspaceId: ws, format, startDate, endDate });
    download(file.data as BlobPart, file.filename, file.contentType);
  });
  const filter = (set: (v: string) => void) => (e: React.ChangeEvent<HTMLInputElement>) => {
    set(e.target.value);
    setOffset(0);
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
        <Field
          label="Actor id"
          value={actor}
          onChange={filter(setActor)}
          hint="A user or service account id."
        />
        <Field
          label="Action"
          value={action}
          onChange={filter(setAction)}
          placeholder="e.g. workspace.create"
        />
        <Field label="From" type="date" value={from} onChange={filter(setFrom)} />
        <Field label="To" type="date" value={to} onChange={filter(setTo)} />
      </form>
      <QueryState
        query={logs}
        empty={(d) => (d.logs.length === 0 ? <Empty>No event matches.</Empty> : undefined)}
      >
        {(d) => (
          <>
            <Table caption="Audit events" head={["Time", "Actor", "Action", "Status", "Address"]}>
              {d.logs.map((log) => (
                <tr key={log.id}>
                  <td>{when(log.timestamp)}</td>
                  <td>
                    <button
                      type="button"
                      className="link"
                      onClick={() => setActor(log.actorId)}
                      title="Show only this actor"
                    >
                      {log.actorType} {log.actorId.slice(0, 8)}
                    </button>
                  </td>
                  <td>{log.action}</td>
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
