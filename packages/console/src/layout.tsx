/** The signed-in frame: skip link, workspace switcher, navigation, the page. */
import { useQuery } from "@connectrpc/connect-query";
import { Link, Navigate, Outlet, useNavigate, useParams, useRouterState } from "@tanstack/react-router";
import { WorkspaceService } from "@wap/api";
import { useEffect, useRef, useState } from "react";
import { useAccess } from "./access";
import { api } from "./api";
import { DecisionsBadge, useAccessRequestEvents, usePendingDecisions } from "./pages/access-requests";
import { currentPath, useMe, useSignedIn } from "./session";
import { ErrorNote, Loading } from "./ui";

/** Each page and the permission that reads it: a role without it does not see the link. */
const workspaceLinks = [
  ["", "Overview", "workspace.read"],
  ["targets", "Targets", "targets.read"],
  ["daemons", "Daemons", "daemons.read"],
  ["sessions", "Sessions", "sessions.read"],
  ["access-requests", "Access requests", "access_requests.read"],
  ["recordings", "Recordings", "sessions.read"],
  ["authorities", "Certificates", "certificate_authorities.read"],
  ["members", "Members", "members.read"],
  ["teams", "Teams", "teams.read"],
  ["service-accounts", "Service accounts", "service_accounts.read"],
  ["domains", "Domains", "domains.read"],
  ["sso", "Single sign-on", "sso.read"],
  ["billing", "Billing", "billing.read"],
  ["audit", "Audit log", "audit.read"],
  ["webhooks", "Webhooks", "webhooks.manage"],
] as const;

export function Shell() {
  const me = useMe();
  const navigate = useNavigate();
  const signedIn = useSignedIn();
  const params = useParams({ strict: false }) as { ws?: string };
  const workspaces = useQuery(WorkspaceService.method.listWorkspaces, {}, { enabled: me.user !== undefined });
  const pathname = useRouterState({ select: (s) => s.location.pathname });
  const [menuOpen, setMenuOpen] = useState(false);
  const main = useRef<HTMLElement>(null);
  const access = useAccess(params.ws ?? "");
  // The count of requests waiting for this person, kept current by the event stream.
  const requestsReadable = access.ready && access.can("access_requests.read");
  useAccessRequestEvents(requestsReadable ? params.ws : undefined);
  const waiting = usePendingDecisions(params.ws, requestsReadable).length;

  // Each page change moves focus to the new page's heading, as a screen reader expects.
  // biome-ignore lint/correctness/useExhaustiveDependencies: runs on every change of page.
  useEffect(() => {
    setMenuOpen(false);
    const heading = main.current?.querySelector<HTMLElement>("h1");
    heading?.focus({ preventScroll: true });
  }, [pathname]);

  if (me.isPending) return <Loading />;
  if (me.signedOut) return <Navigate to="/sign-in" search={{ next: currentPath() }} replace />;
  if (!me.user) return <ErrorNote error={me.error} />;

  const ws = params.ws;
  const signOut = async () => {
    await api.auth.logout({}).catch(() => undefined);
    await signedIn();
    await navigate({ to: "/sign-in" });
  };

  return (
    <div className="shell">
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <button
          type="button"
          className="menu-toggle secondary"
          aria-expanded={menuOpen}
          aria-controls="sidebar"
          onClick={() => setMenuOpen(!menuOpen)}
        >
          Menu
        </button>
        <Link to="/" className="brand">
          WAP
        </Link>
        <label className="switcher">
          <span className="visually-hidden">Workspace</span>
          <select
            value={ws ?? ""}
            onChange={(e) =>
              void navigate(e.target.value ? { to: "/w/$ws", params: { ws: e.target.value } } : { to: "/" })
            }
          >
            <option value="">All workspaces</option>
            {workspaces.data?.workspaces.map((w) => (
              <option key={w.id} value={w.id}>
                {w.name}
              </option>
            ))}
          </select>
        </label>
        <nav aria-label="Account" className="account-nav">
          <Link to="/account">{me.user.name}</Link>
          <button type="button" className="link" onClick={() => void signOut()}>
            Sign out
          </button>
        </nav>
      </header>
      <div className="body">
        {ws && (
          <nav id="sidebar" aria-label="Workspace" className={menuOpen ? "sidebar open" : "sidebar"}>
            <ul>
              {workspaceLinks
                .filter(([, , need]) => !access.ready || access.can(need))
                .map(([path, label]) => (
                  <li key={path}>
                    <Link
                      to={path ? `/w/$ws/${path}` : "/w/$ws"}
                      params={{ ws }}
                      activeOptions={{ exact: path === "" }}
                      activeProps={{ "aria-current": "page", className: "active" }}
                    >
                      {label}
                      {path === "access-requests" && <DecisionsBadge count={waiting} />}
                    </Link>
                  </li>
                ))}
            </ul>
          </nav>
        )}
        <main id="main" ref={main}>
          <Outlet />
        </main>
      </div>
    </div>
  );
}
