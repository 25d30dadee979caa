/** The console's entry: query client, Connect transport, routes. */
import { TransportProvider } from "@connectrpc/connect-query";
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import {
  createRootRoute,
  createRoute,
  createRouter,
  Link,
  Outlet,
  RouterProvider,
  useMatches,
} from "@tanstack/react-router";
import { StrictMode, useEffect } from "react";
import { createRoot } from "react-dom/client";
import { Code, isCode, transport } from "./api";
import { Shell } from "./layout";
import { AccessRequestLinkPage, AccessRequestsPage } from "./pages/access-requests";
import { AccountPage } from "./pages/account";
import { BillingPage, DomainsPage, SsoSettingsPage } from "./pages/admin";
import { AuditPage } from "./pages/audit";
import {
  ForgotPasswordPage,
  ResetPasswordPage,
  SignInPage,
  SignUpPage,
  SsoPage,
  VerifyEmailPage,
} from "./pages/auth";
import { AuthoritiesPage } from "./pages/certificates";
import { CliLoginPage, InvitePage } from "./pages/links";
import { RecordingsPage, SessionsPage, TerminalPage } from "./pages/sessions";
import { StepUpPage } from "./pages/step-up";
import { DaemonsPage, TargetsPage } from "./pages/targets";
import { WebhooksPage } from "./pages/webhooks";
import { MembersPage, OverviewPage, ServiceAccountsPage, TeamsPage, WorkspacesPage } from "./pages/workspace";
import "./styles.css";

const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      staleTime: 5_000,
      // A refusal will not change on its own; only transient failures are worth a retry.
      retry: (count, error) =>
        count < 2 &&
        (isCode(error, Code.Unavailable) || isCode(error, Code.Unknown) || isCode(error, Code.Internal)),
    },
  },
});

function NotFound() {
  return (
    <main className="auth" id="main">
      <div className="auth-card">
        <h1>Page not found</h1>
        <Link to="/">Go to the start page</Link>
      </div>
    </main>
  );
}

declare module "@tanstack/react-router" {
  interface StaticDataRouteOption {
    /** What the page is for, in one sentence: its meta description. */
    description?: string;
  }
}

const defaultDescription = document.querySelector('meta[name="description"]')?.getAttribute("content") ?? "";

/** Every page: the router's outlet, and the page's description in the document's head. */
function Root() {
  const description = useMatches({ select: (matches) => matches.at(-1)?.staticData.description });
  useEffect(() => {
    document
      .querySelector('meta[name="description"]')
      ?.setAttribute("content", description ?? defaultDescription);
  }, [description]);
  return <Outlet />;
}

const root = createRootRoute({ component: Root, notFoundComponent: NotFound });
const page = (path: string, component: () => React.ReactNode, description: string) =>
  createRoute({ getParentRoute: () => root, path, component, staticData: { description } });

const shell = createRoute({ getParentRoute: () => root, id: "shell", component: Shell });
const inShell = (path: string, component: () => React.ReactNode, description: string) =>
  createRoute({ getParentRoute: () => shell, path, component, staticData: { description } });

const routeTree = root.addChildren([
  page(
    "/sign-in",
    SignInPage,
    "Sign in to the Workspace Access Platform with a password, a passkey or single sign-on.",
  ),
  page("/sign-up", SignUpPage, "Create a Workspace Access Platform account."),
  page("/forgot-password", ForgotPasswordPage, "Ask for a link to choose a new password."),
  page("/reset-password", ResetPasswordPage, "Choose a new password with the link from your mail."),
  page("/verify-email", VerifyEmailPage, "Confirm your email address with the link from your mail."),
  page("/sso", SsoPage, "The outcome of a sign-in through your organisation's identity provider."),
  page("/invites/$token", InvitePage, "Accept an invitation to join a workspace."),
  page("/cli-login", CliLoginPage, "Approve or deny a sign-in of the wap command line."),
  page("/access-requests", AccessRequestLinkPage, "Open an access request from its mailed link."),
  shell.addChildren([
    inShell("/", WorkspacesPage, "Your workspaces, and a new one."),
    inShell("/account", AccountPage, "Your profile, password, passkeys, backup codes and signed-in devices."),
    inShell("/w/$ws", OverviewPage, "What the workspace has set up, the next step, and its settings."),
    inShell("/w/$ws/members", MembersPage, "The workspace's members, their roles, and the invitation link."),
    inShell("/w/$ws/teams", TeamsPage, "Teams of members, to grant logins to together."),
    inShell("/w/$ws/service-accounts", ServiceAccountsPage, "Service accounts: tokens for scripts and CI."),
    inShell("/w/$ws/domains", DomainsPage, "Domains the workspace proved it owns, for single sign-on."),
    inShell("/w/$ws/sso", SsoSettingsPage, "The workspace's OpenID Connect and SAML identity providers."),
    inShell("/w/$ws/billing", BillingPage, "The licence and the subscription."),
    inShell(
      "/w/$ws/authorities",
      AuthoritiesPage,
      "SSH and X.509 certificate authorities: create, trust, roll over.",
    ),
    inShell("/w/$ws/targets", TargetsPage, "Machines to log in to, and who may log in as which account."),
    inShell(
      "/w/$ws/access-requests",
      AccessRequestsPage,
      "Ask for just-in-time access, and approve or deny the requests waiting for you.",
    ),
    inShell(
      "/w/$ws/step-up/$id",
      StepUpPage,
      "Confirm with a passkey the SSH logins the wap command line asked for.",
    ),
    inShell("/w/$ws/daemons", DaemonsPage, "Enrol machines with the agent, and accept them."),
    inShell("/w/$ws/sessions", SessionsPage, "Open a terminal on a machine, and the open sessions."),
    inShell("/w/$ws/terminal/$daemon/$session", TerminalPage, "A terminal on a machine, in the browser."),
    inShell("/w/$ws/recordings", RecordingsPage, "Recorded terminal sessions: play, download, delete."),
    inShell("/w/$ws/audit", AuditPage, "Who did what, to what, and when: filter and export."),
    inShell(
      "/w/$ws/webhooks",
      WebhooksPage,
      "Endpoints that receive every audit event, and their deliveries.",
    ),
  ]),
]);

const router = createRouter({ routeTree, defaultPreload: false });

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <TransportProvider transport={transport}>
      <QueryClientProvider client={queryClient}>
        <RouterProvider router={router} />
      </QueryClientProvider>
    </TransportProvider>
  </StrictMode>,
);
