/**
 * Webhooks: the endpoints that receive every audit event of the workspace, where delivery to each
 * stands (sequence, failures, last error), the recent attempts, and the actions (add, test,
 * rotate the secret, enable or disable, delete). A secret is shown once, when it is made.
 */
import { useQuery } from "@connectrpc/connect-query";
import { type WebhookEndpoint, WebhookService } from "@wap/api";
import { useState } from "react";
import { Can, useAccess } from "../access";
import { api, when } from "../api";
import {
  ActionForm,
  ConfirmButton,
  Copyable,
  Empty,
  ErrorNote,
  Field,
  Notice,
  Page,
  QueryState,
  Section,
  Table,
  text,
  useAction,
} from "../ui";
import { useWs } from "./workspace";

const need = "webhooks.manage";

/** Where delivery to an endpoint stands, in words. */
function standing(e: WebhookEndpoint): string {
  if (!e.enabled) return e.disabledReason === "failing" ? "Disabled after failing too long" : "Disabled";
  if (e.failingSince) return `Failing since ${when(e.failingSince)}`;
  const behind = e.latestSequence - e.deliveredSequence;
  return behind > 0n ? `${behind} to send` : "Up to date";
}

export function WebhooksPage() {
  const ws = useWs();
  const access = useAccess(ws);
  if (access.ready && !access.can(need)) {
    return (
      <Page title="Webhooks">
        <Can access={access} need={need} doing="manage webhooks">
          {null}
        </Can>
      </Page>
    );
  }
  return <Webhooks ws={ws} />;
}

function Webhooks({ ws }: { ws: string }) {
  // Read again every few seconds: deliveries and failures happen without a click.
  const list = useQuery(
    WebhookService.method.listWebhookEndpoints,
    { workspaceId: ws, limit: 100 },
    { refetchInterval: 3_000 },
  );
  const [shown, setShown] = useState("");
  const create = useAction((form: FormData) =>
    api.webhooks.createWebhookEndpoint({
      workspaceId: ws,
      url: text(form, "url"),
      description: text(form, "description"),
      eventTypes: text(form, "eventTypes")
        .split(/[\s,]+/)
        .filter((t) => t !== ""),
    }),
  );
  const rotate = useAction((id: string) => api.webhooks.rotateWebhookSecret({ workspaceId: ws, id }));
  const test = useAction((id: string) => api.webhooks.sendTestWebhook({ workspaceId: ws, id }));
  const toggle = useAction((id: string, enabled: boolean) =>
    api.webhooks.updateWebhookEndpoint({ workspaceId: ws, id, enabled }),
  );
  const remove = useAction((id: string) => api.webhooks.deleteWebhookEndpoint({ workspaceId: ws, id }));
  const secret = rotate.result?.secret ?? create.result?.secret;
  const tested = test.result?.delivery;
  return (
    <Page title="Webhooks">
      <p className="muted">
        Every audit event of this workspace is sent to each endpoint, signed (Standard Webhooks), at least
        once and in sequence order; a receiver dedupes by the <code>webhook-id</code> header.
      </p>
      {secret && (
        <Section title="Signing secret">
          <Notice>Copy the secret now: it is shown only this once.</Notice>
          <Copyable text={secret} label="Signing secret" />
          <button
            type="button"
            className="secondary"
            onClick={() => {
              create.reset();
              rotate.reset();
            }}
          >
            Done
          </button>
        </Section>
      )}
      {tested && (
        <p role="status">
          {tested.succeeded
            ? `The test message was delivered (HTTP ${tested.httpStatus}, ${tested.durationMs} ms).`
            : `The test message was not delivered: ${tested.error}`}
        </p>
      )}
      <ErrorNote error={rotate.error ?? test.error ?? toggle.error ?? remove.error} />
      <QueryState
        query={list}
        empty={(d) => (d.endpoints.length === 0 ? <Empty>No webhook endpoint yet.</Empty> : undefined)}
      >
        {(d) => (
          <Table caption="Webhook endpoints" head={["Endpoint", "Events", "Sequence", "Delivery", "Actions"]}>
            {d.endpoints.map((e) => (
              <tr key={e.id}>
                <td>
                  {e.url}
                  <div className="muted">{e.description}</div>
                </td>
                <td>{e.eventTypes.length === 0 ? "All" : e.eventTypes.join(", ")}</td>
                <td>
                  {String(e.deliveredSequence)} of {String(e.latestSequence)}
                </td>
                <td>
                  {standing(e)}
                  {e.lastError && <div className="muted">Last error: {e.lastError}</div>}
                  {e.lastSuccessAt && <div className="muted">Last delivered {when(e.lastSuccessAt)}</div>}
                </td>
                <td>
                  <div className="row">
                    <button type="button" className="secondary" onClick={() => setShown(e.id)}>
                      Deliveries of {e.url}
                    </button>
                    <button type="button" className="secondary" onClick={() => void test.act(e.id)}>
                      Send a test to {e.url}
                    </button>
                    <button
                      type="button"
                      className="secondary"
                      onClick={() => void toggle.act(e.id, !e.enabled)}
                    >
                      {e.enabled ? "Disable" : "Enable"} {e.url}
                    </button>
                    <ConfirmButton
                      className="secondary"
                      label={`Rotate the secret of ${e.url}`}
                      question="Make a new secret? The old one keeps signing beside it for a day."
                      confirm="Yes, rotate the secret"
                      onConfirm={() => rotate.act(e.id)}
                    />
                    <ConfirmButton
                      label={`Delete ${e.url}`}
                      question={`Delete the endpoint ${e.url}? Nothing more is sent to it.`}
                      confirm={`Yes, delete ${e.url}`}
                      onConfirm={() => remove.act(e.id)}
                    />
                  </div>
                </td>
              </tr>
            ))}
          </Table>
        )}
      </QueryState>
      {shown && <Deliveries ws={ws} id={shown} />}
      <Section title="Add an endpoint">
        <ActionForm action={create} submit="Add endpoint">
          <Field label="URL" name="url" type="url" required placeholder="https://siem.example.com/wap" />
          <Field label="Description" name="description" />
          <Field
            label="Event types"
            name="eventTypes"
            hint="Audit actions or prefixes, e.g. certificate.* member.update; empty: every event."
          />
        </ActionForm>
      </Section>
    </Page>
  );
}

function Deliveries({ ws, id }: { ws: string; id: string }) {
  const deliveries = useQuery(
    WebhookService.method.listWebhookDeliveries,
    { workspaceId: ws, id, limit: 50 },
    { refetchInterval: 5_000 },
  );
  return (
    <Section title="Recent delivery attempts">
      <QueryState
        query={deliveries}
        empty={(d) => (d.deliveries.length === 0 ? <Empty>No attempt yet.</Empty> : undefined)}
      >
        {(d) => (
          <Table caption="Delivery attempts" head={["Sequence", "Event", "Attempt", "Time", "Result"]}>
            {d.deliveries.map((a) => (
              <tr key={a.id}>
                <td>{String(a.sequence)}</td>
                <td>
                  {a.eventType}
                  <div className="muted">{a.eventId}</div>
                </td>
                <td>{a.attempt}</td>
                <td>{when(a.attemptedAt)}</td>
                <td>{a.succeeded ? `Delivered (HTTP ${a.httpStatus}, ${a.durationMs} ms)` : a.error}</td>
              </tr>
            ))}
          </Table>
        )}
      </QueryState>
    </Section>
  );
}
