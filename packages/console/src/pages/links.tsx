/** Pages that links open: an invitation, and the approval of a CLI login. */
import { useQuery } from "@connectrpc/connect-query";
import { Link, useNavigate, useParams, useSearch } from "@tanstack/react-router";
import { AuthService, InvitationService } from "@wap/api";
import { useState } from "react";
import { api, Code, isCode, when } from "../api";
import { currentPath, useMe } from "../session";
import { ErrorNote, Field, Loading, Notice, useAction, useDocumentTitle } from "../ui";

function LinkCard({ title, children }: { title: string; children: React.ReactNode }) {
  useDocumentTitle(title);
  return (
    <main className="auth" id="main">
      <div className="auth-card">
        <p className="brand">Workspace Access Platform</p>
        <h1 tabIndex={-1}>{title}</h1>
        {children}
      </div>
    </main>
  );
}

/** Sign in (or up) first, then come back here. */
function SignInFirst({ why }: { why: string }) {
  const next = currentPath();
  return (
    <>
      <p>{why}</p>
      <div className="stack">
        <Link className="button" to="/sign-in" search={{ next }}>
          Sign in
        </Link>
        <Link className="button secondary" to="/sign-up" search={{ next }}>
          Create an account
        </Link>
      </div>
    </>
  );
}

export function InvitePage() {
  const { token } = useParams({ strict: false }) as { token: string };
  const navigate = useNavigate();
  const me = useMe();
  const invitation = useQuery(InvitationService.method.getInvitation, { token }, { retry: false });
  const accept = useAction(async () => {
    const { workspaceId } = await api.invitations.acceptInvitation({ token });
    await navigate({ to: "/w/$ws", params: { ws: workspaceId } });
  });

  return (
    <LinkCard title="Invitation">
      {invitation.isPending && <Loading />}
      <ErrorNote error={invitation.error} />
      {invitation.data && (
        <>
          <p>
            You are invited to join <strong>{invitation.data.workspaceName}</strong>.
          </p>
          {invitation.data.workspaceDescription && (
            <p className="muted">{invitation.data.workspaceDescription}</p>
          )}
          <p className="muted">The link is valid until {when(invitation.data.expiresAt)}.</p>
          {me.isPending ? (
            <Loading />
          ) : me.user ? (
            <>
              <p>
                You are signed in as {me.user.name} ({me.user.email}).
              </p>
              <button type="button" onClick={() => void accept.act()} disabled={accept.busy}>
                Join {invitation.data.workspaceName}
              </button>
              <ErrorNote error={accept.error} />
            </>
          ) : (
            <SignInFirst why="Sign in, or create an account, to accept it." />
          )}
        </>
      )}
    </LinkCard>
  );
}

export function CliLoginPage() {
  const search = useSearch({ strict: false }) as Record<string, unknown>;
  const loginCode = typeof search.code === "string" ? search.code : "";
  const me = useMe();
  const details = useQuery(
    AuthService.method.getCLILogin,
    { loginCode },
    { retry: false, enabled: me.user !== undefined && loginCode !== "" },
  );
  const [outcome, setOutcome] = useState<"approved" | "denied">();
  const verify = useAction(async (userCode: string, deny: boolean) => {
    await api.auth.verifyCLILogin({ loginCode, userCode: userCode.trim().toUpperCase(), deny });
    setOutcome(deny ? "denied" : "approved");
  });
  const [userCode, setUserCode] = useState("");

  if (!loginCode) {
    return (
      <LinkCard title="Approve a CLI sign-in">
        <p className="error">This link has no login code: open the link the CLI printed again.</p>
      </LinkCard>
    );
  }
  if (me.isPending) return <LinkCard title="Approve a CLI sign-in">{<Loading />}</LinkCard>;
  if (!me.user) {
    return (
      <LinkCard title="Approve a CLI sign-in">
        <SignInFirst why="Sign in to approve the command-line sign-in." />
      </LinkCard>
    );
  }
  if (outcome) {
    return (
      <LinkCard title="Approve a CLI sign-in">
        <Notice>
          {outcome === "approved"
            ? "Approved: the command line is signed in as you. You can close this page."
            : "Denied: the command line was refused."}
        </Notice>
      </LinkCard>
    );
  }
  const unimplemented = isCode(details.error, Code.Unimplemented);
  if (details.error && !unimplemented) {
    // An unknown, expired or decided login: nothing to approve here.
    return (
      <LinkCard title="Approve a CLI sign-in">
        <ErrorNote error={details.error} />
        <p>Run the sign-in again (`wap login`) and open the new link it prints.</p>
      </LinkCard>
    );
  }
  return (
    <LinkCard title="Approve a CLI sign-in">
      <p>
        A command line asks to sign in as <strong>{me.user.email}</strong>. Approve it only if you started it
        yourself, just now.
      </p>
      {details.isPending && details.fetchStatus !== "idle" && <Loading />}
      {details.data && (
        <dl className="facts">
          <dt>Device</dt>
          <dd>{details.data.deviceName || "—"}</dd>
          <dt>System</dt>
          <dd>{details.data.os || "—"}</dd>
          <dt>Client</dt>
          <dd>{details.data.clientVersion || "—"}</dd>
          <dt>Address</dt>
          <dd>{details.data.clientAddress || "—"}</dd>
          <dt>Started</dt>
          <dd>{when(details.data.createdAt)}</dd>
          <dt>Expires</dt>
          <dd>{when(details.data.expiresAt)}</dd>
        </dl>
      )}
      {unimplemented && <Notice>This server does not describe the device.</Notice>}
      <form
        aria-label="Approve or deny"
        onSubmit={(e) => {
          e.preventDefault();
          void verify.act(userCode, false);
        }}
      >
        <Field
          label="Code shown by the CLI"
          name="user_code"
          value={userCode}
          onChange={(e) => setUserCode(e.target.value)}
          autoComplete="off"
          autoCapitalize="characters"
          required
          hint="Type the code the CLI printed next to this link. Three wrong codes cancel the sign-in."
        />
        <div className="row">
          <button type="submit" disabled={verify.busy}>
            Approve
          </button>
          <button
            type="button"
            className="danger"
            disabled={verify.busy}
            onClick={() => void verify.act(userCode, true)}
          >
            Deny
          </button>
        </div>
        <ErrorNote error={verify.error} />
      </form>
    </LinkCard>
  );
}
