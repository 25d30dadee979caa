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
} from "@tanstack/react-router";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { Code, isCode, transport } from "./api";
import { Shell } from "./layout";
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
import { DaemonsPage, TargetsPage } from "./pages/targets";
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

const root = createRootRoute({ component: Outlet, notFoundComponent: NotFound });
const page = (path: string, component: () => React.ReactNode) =>
  createRoute({ getParentRoute: () => root, path, component });

const shell = createRoute({ getParentRoute: () => root, id: "shell", component: Shell });
const inShell = (path: string, component: () => React.ReactNode) =>
  createRoute({ getParentRoute: () => shell, path, component });

const routeTree = root.addChildren([
  page("/sign-in", SignInPage),
  page("/sign-up", SignUpPage),
  page("/forgot-password", ForgotPasswordPage),
  page("/reset-password", ResetPasswordPage),
  page("/verify-email", VerifyEmailPage),
  page("/sso", SsoPage),
  page("/invites/$token", InvitePage),
  page("/cli-login", CliLoginPage),
  shell.addChildren([
    inShell("/", WorkspacesPage),
    inShell("/account", AccountPage),
    inShell("/w/$ws", OverviewPage),
    inShell("/w/$ws/members", MembersPage),
    inShell("/w/$ws/teams", TeamsPage),
    inShell("/w/$ws/service-accounts", ServiceAccountsPage),
    inShell("/w/$ws/domains", DomainsPage),
    inShell("/w/$ws/sso", SsoSettingsPage),
    inShell("/w/$ws/billing", BillingPage),
    inShell("/w/$ws/authorities", AuthoritiesPage),
    inShell("/w/$ws/targets", TargetsPage),
    inShell("/w/$ws/daemons", DaemonsPage),
    inShell("/w/$ws/sessions", SessionsPage),
    inShell("/w/$ws/terminal/$daemon/$session", TerminalPage),
    inShell("/w/$ws/recordings", RecordingsPage),
    inShell("/w/$ws/audit", AuditPage),
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
