/**
 * The workspace's first steps on its overview: an SSH authority, a machine enrolled and
 * accepted, a login granted, a first login. Each step says whether it is done (from what the
 * caller may read), and the first one not done is the next step, with the page that does it.
 */
import { useQuery } from "@connectrpc/connect-query";
import { Link } from "@tanstack/react-router";
import {
  AuthorityType,
  CertificateService,
  DaemonService,
  DaemonStatus,
  TargetService,
  UtilService,
} from "@wap/api";
import type { ReactNode } from "react";
import type { Access } from "../access";
import { Section } from "../ui";

type StepState = "done" | "todo" | "unknown";

interface Step {
  readonly key: string;
  readonly title: string;
  readonly state: StepState;
  readonly page: "authorities" | "daemons" | "targets" | "sessions";
  readonly how: ReactNode;
  /** Who may do it, when the caller may not. */
  readonly who?: string;
}

export function SetupProgress({ ws, access }: { ws: string; access: Access }) {
  const cas = useQuery(CertificateService.method.listCertificateAuthorities, { workspaceId: ws });
  const daemons = useQuery(DaemonService.method.listDaemons, { workspaceId: ws, limit: 100 });
  const targets = useQuery(TargetService.method.listTargets, { workspaceId: ws, limit: 100 });
  const readsAudit = access.can("audit.read");
  const logins = useQuery(
    UtilService.method.listAuditLogs,
    { workspaceId: ws, limit: 1, actions: ["session.create", "certificate.sign_ssh_user"] },
    { enabled: readsAudit },
  );
  if (!access.ready || cas.isPending || daemons.isPending || targets.isPending) return null;

  const state = (done: boolean | undefined): StepState =>
    done === undefined ? "unknown" : done ? "done" : "todo";
  const ssh = cas.data?.certificateAuthorities.filter((c) => c.authorityType !== AuthorityType.X509) ?? [];
  const accepted = daemons.data?.daemons.filter((d) => d.status === DaemonStatus.ACCEPTED) ?? [];
  const pending = daemons.data?.daemons.filter((d) => d.status === DaemonStatus.PENDING) ?? [];
  const granted = (targets.data?.targets ?? []).some((t) =>
    t.principals.some((p) => p.userIds.length + p.teamIds.length + p.serviceAccountIds.length > 0),
  );
  const loggedIn = readsAudit ? (logins.data ? logins.data.total > 0 : undefined) : undefined;
  const whoCan = (permission: string) => (access.can(permission) ? undefined : access.reason(permission));

  const steps: Step[] = [
    {
      key: "authority",
      title: "Create an SSH certificate authority",
      state: state(ssh.length > 0),
      page: "authorities",
      how: "It signs the certificates people log in with and the machines' host certificates. The first one is the default.",
      ...(whoCan("certificate_authorities.manage") && { who: whoCan("certificate_authorities.manage") }),
    },
    {
      key: "machine",
      title: "Enrol a machine and accept it",
      state: state(accepted.length > 0),
      page: "daemons",
      how:
        pending.length > 0
          ? `${pending.map((d) => d.name).join(", ")} ${pending.length === 1 ? "waits" : "wait"} for approval on the Daemons page.`
          : "Run the agent on the machine with an enrolment token from the Daemons page, then accept it there.",
      ...(whoCan("daemons.manage") && { who: whoCan("daemons.manage") }),
    },
    {
      key: "grant",
      title: "Grant a login",
      state: state(granted),
      page: "targets",
      how: "On a target, add the Unix account people log in as, and choose who may.",
      ...(whoCan("principals.manage") && { who: whoCan("principals.manage") }),
    },
    {
      key: "login",
      title: "Log in",
      state: state(loggedIn),
      page: "sessions",
      how: (
        <>
          Open a terminal on the Sessions page, or from your computer: <code>wap login</code>, then{" "}
          <code>wap ssh &lt;account&gt;@&lt;target&gt;</code>.
        </>
      ),
    },
  ];
  const next = steps.find((s) => s.state === "todo");
  const done = steps.filter((s) => s.state === "done").length;
  return (
    <Section title="Getting started">
      <p>
        {next ? (
          <>
            <strong>Next step:</strong>{" "}
            <Link to={`/w/$ws/${next.page}`} params={{ ws }}>
              {next.title}
            </Link>
            . {done} of {steps.length} done.
          </>
        ) : steps.some((s) => s.state === "unknown") ? (
          `${done} of ${steps.length} steps done; your role cannot see the rest.`
        ) : (
          "Everything is set up: people can log in."
        )}
      </p>
      <ol className="setup">
        {steps.map((step) => (
          <li key={step.key} className={step.state} aria-current={step === next ? "step" : undefined}>
            <span className="badge">
              {step.state === "done" ? "Done" : step.state === "unknown" ? "Not shown to your role" : "To do"}
            </span>{" "}
            <Link to={`/w/$ws/${step.page}`} params={{ ws }}>
              {step.title}
            </Link>
            {step.state !== "done" && (
              <div className="muted">
                {step.how}
                {step.who && ` ${step.who}`}
              </div>
            )}
          </li>
        ))}
      </ol>
    </Section>
  );
}
