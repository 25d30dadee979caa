/**
 * A grant's limits on the target page: what certificates signed under the grant allow (shown as
 * a short summary), and a form to change them. Saving grants the subject again with the same
 * kind, end and approval policy and the new limits; "No limits" lets certificates carry the
 * authority's own options. A passkey step-up is offered for users and teams, never for service
 * accounts (which have no passkey).
 *
 * @module
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { type Grant, type GrantLimits, type GrantLimitsSchema, PrincipalType } from "@wap/api";
import { useState } from "react";
import { api } from "../api";
import { ActionForm, Check, useAction } from "../ui";

/** One line naming what the limits allow and require. */
export function describeLimits(limits: GrantLimits | undefined): string {
  if (limits === undefined) return "no limits (the authority's options)";
  const allowed = [
    limits.permitPty && "PTY",
    limits.permitPortForwarding && "port forwarding",
    limits.permitAgentForwarding && "agent forwarding",
    limits.permitX11Forwarding && "X11",
  ].filter(Boolean);
  const from = [
    limits.pinClientAddress && "the address it was issued to",
    limits.sourceCidrs.length > 0 && limits.sourceCidrs.join(", "),
  ].filter(Boolean);
  const parts = [
    `allows ${allowed.length > 0 ? allowed.join(", ") : "no PTY or forwarding"}`,
    from.length > 0 && `from ${from.join(" within ")}`,
    limits.commands.length > 0 && `commands: ${limits.commands.join("; ")}`,
    limits.verifyRequired && "FIDO user verification",
    limits.skKeysOnly && "hardware (sk-) keys only",
    limits.requireStepUp && "a passkey step-up for each connection",
  ].filter(Boolean);
  return parts.join("; ");
}

const lines = (value: FormDataEntryValue | null) =>
  String(value ?? "")
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "");

function limitsOf(form: FormData): MessageInitShape<typeof GrantLimitsSchema> | undefined {
  if (form.get("none") === "on") return undefined;
  const on = (name: string) => form.get(name) === "on";
  return {
    pinClientAddress: on("pinClientAddress"),
    sourceCidrs: lines(form.get("sourceCidrs")),
    permitPty: on("permitPty"),
    permitPortForwarding: on("permitPortForwarding"),
    permitAgentForwarding: on("permitAgentForwarding"),
    permitX11Forwarding: on("permitX11Forwarding"),
    verifyRequired: on("verifyRequired"),
    skKeysOnly: on("skKeysOnly"),
    commands: lines(form.get("commands")),
    requireStepUp: on("requireStepUp"),
  };
}

/** The limits of `grant` and, for those who may manage principals, a form that edits them. */
export function GrantLimitsEditor({
  workspaceId,
  principalId,
  grant,
  who,
  canEdit,
}: {
  workspaceId: string;
  principalId: string;
  grant: Grant;
  who: string;
  canEdit: boolean;
}) {
  const [open, setOpen] = useState(false);
  const save = useAction(async (form: FormData) => {
    const limits = limitsOf(form);
    await api.principals.addSubjectsToPrincipal({
      workspaceId,
      id: principalId,
      subjectIds: [grant.subjectId],
      type: grant.type,
      kind: grant.kind,
      ...(grant.validUntil && { validUntil: grant.validUntil }),
      ...(grant.approval && { approval: grant.approval }),
      ...(limits && { limits }),
    });
    setOpen(false);
  });
  const limits = grant.limits;
  return (
    <div className="grant-limits">
      <small className="muted" title={`Limits of ${who}`}>
        {describeLimits(limits)}
      </small>{" "}
      {canEdit && !open && (
        <button type="button" className="link" onClick={() => setOpen(true)}>
          Edit limits of {who}
        </button>
      )}
      {open && (
        <ActionForm action={save} submit={`Save limits of ${who}`} label={`Limits of ${who}'s grant`}>
          <Check
            label="No limits (certificates carry the authority's options)"
            name="none"
            defaultChecked={!limits}
          />
          <Check
            label="Pin to the address the certificate is issued to"
            name="pinClientAddress"
            defaultChecked={limits?.pinClientAddress}
          />
          <div className="field">
            <label htmlFor={`cidrs-${grant.subjectId}`}>
              Source addresses (one address or CIDR block per line)
            </label>
            <textarea
              id={`cidrs-${grant.subjectId}`}
              name="sourceCidrs"
              rows={2}
              defaultValue={limits?.sourceCidrs.join("\n")}
            />
          </div>
          <Check label="Allow a PTY" name="permitPty" defaultChecked={limits?.permitPty} />
          <Check
            label="Allow port forwarding"
            name="permitPortForwarding"
            defaultChecked={limits?.permitPortForwarding}
          />
          <Check
            label="Allow agent forwarding"
            name="permitAgentForwarding"
            defaultChecked={limits?.permitAgentForwarding}
          />
          <Check
            label="Allow X11 forwarding"
            name="permitX11Forwarding"
            defaultChecked={limits?.permitX11Forwarding}
          />
          <Check
            label="Require FIDO user verification (PIN or biometrics)"
            name="verifyRequired"
            defaultChecked={limits?.verifyRequired}
          />
          <Check label="Hardware (sk-) keys only" name="skKeysOnly" defaultChecked={limits?.skKeysOnly} />
          {grant.type !== PrincipalType.SERVICE_ACCOUNT && (
            <Check
              label="Require a passkey step-up for each connection (single-use certificates, valid 60 s)"
              name="requireStepUp"
              defaultChecked={limits?.requireStepUp}
            />
          )}
          <div className="field">
            <label htmlFor={`commands-${grant.subjectId}`}>Allowed commands (one per line; none: any)</label>
            <textarea
              id={`commands-${grant.subjectId}`}
              name="commands"
              rows={2}
              defaultValue={limits?.commands.join("\n")}
            />
          </div>
        </ActionForm>
      )}
    </div>
  );
}
