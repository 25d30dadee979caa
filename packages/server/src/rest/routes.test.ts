import type { DescMethod } from "@bufbuild/protobuf";
import { platformServices } from "@wap/api";
import { InvalidArgumentError } from "@wap/core";
import { describe, expect, it } from "vitest";
import { createRestRoutes, type RestMatch } from "./index.js";

const allServices = platformServices;

// The REST routes the contract promises, written out by hand: [service, rpc, HTTP method, path template, body rule].
export const referenceRoutes = [
  ["WorkspaceService", "GetWorkspace", "GET", "/v1/workspaces/{workspace_id}", ""],
  ["WorkspaceService", "ListWorkspaces", "GET", "/v1/workspaces", ""],
  ["WorkspaceService", "CreateWorkspace", "POST", "/v1/workspaces", "*"],
  ["WorkspaceService", "UpdateWorkspace", "PATCH", "/v1/workspaces/{workspace_id}", "*"],
  ["WorkspaceService", "UpdateWorkspaceSettings", "PATCH", "/v1/workspaces/{workspace_id}/settings", "*"],
  ["WorkspaceService", "DeleteWorkspace", "DELETE", "/v1/workspaces/{workspace_id}", ""],
  ["WorkspaceService", "GetWorkspaceMember", "GET", "/v1/workspaces/{workspace_id}/members/{user_id}", ""],
  ["WorkspaceService", "ListWorkspaceMembers", "GET", "/v1/workspaces/{workspace_id}/members", ""],
  [
    "WorkspaceService",
    "RemoveWorkspaceMember",
    "DELETE",
    "/v1/workspaces/{workspace_id}/members/{user_id}",
    "",
  ],
  [
    "WorkspaceService",
    "UpdateWorkspaceMember",
    "POST",
    "/v1/workspaces/{workspace_id}/members/{user_id}",
    "",
  ],
  ["WorkspaceService", "UpdateWorkspaceOwner", "POST", "/v1/workspaces/{workspace_id}/owner/{new_owner}", ""],
  [
    "WorkspaceService",
    "SubscribeWorkspaceEvents",
    "GET",
    "/v1/workspaces/{workspace_id}/events:subscribe",
    "",
  ],
  [
    "WorkspaceDomainService",
    "GetWorkspaceDomain",
    "GET",
    "/v1/workspaces/{workspace_id}/domains/{domain}",
    "",
  ],
  ["WorkspaceDomainService", "ListWorkspaceDomains", "GET", "/v1/workspaces/{workspace_id}/domains", ""],
  ["WorkspaceDomainService", "CreateWorkspaceDomain", "POST", "/v1/workspaces/{workspace_id}/domains", "*"],
  [
    "WorkspaceDomainService",
    "DeleteWorkspaceDomain",
    "DELETE",
    "/v1/workspaces/{workspace_id}/domains/{domain}",
    "",
  ],
  [
    "WorkspaceDomainService",
    "VerifyWorkspaceDomain",
    "POST",
    "/v1/workspaces/{workspace_id}/domains/{domain}:verify",
    "",
  ],
  [
    "WorkspaceDomainService",
    "RegenerateWorkspaceDomainToken",
    "POST",
    "/v1/workspaces/{workspace_id}/domains/{domain}:generate",
    "",
  ],
  ["InvitationService", "RefreshInviteToken", "POST", "/v1/workspaces/{workspace_id}/invites:refresh", ""],
  ["InvitationService", "RevokeInviteToken", "DELETE", "/v1/workspaces/{workspace_id}/invites:revoke", ""],
  ["InvitationService", "GetInvitation", "GET", "/v1/invites/{token}", ""],
  ["InvitationService", "AcceptInvitation", "POST", "/v1/invites/{token}", ""],
  ["TeamService", "GetTeam", "GET", "/v1/workspaces/{workspace_id}/teams/{id}", ""],
  ["TeamService", "ListTeams", "GET", "/v1/workspaces/{workspace_id}/teams", ""],
  ["TeamService", "CreateTeam", "POST", "/v1/workspaces/{workspace_id}/teams", "*"],
  ["TeamService", "UpdateTeam", "PATCH", "/v1/workspaces/{workspace_id}/teams/{id}", "*"],
  ["TeamService", "DeleteTeam", "DELETE", "/v1/workspaces/{workspace_id}/teams/{id}", ""],
  [
    "TeamService",
    "AddTeamMember",
    "POST",
    "/v1/workspaces/{workspace_id}/teams/{team_id}/members/{user_id}",
    "",
  ],
  [
    "TeamService",
    "RemoveTeamMember",
    "DELETE",
    "/v1/workspaces/{workspace_id}/teams/{team_id}/members/{user_id}",
    "",
  ],
  [
    "ServiceAccountService",
    "GetServiceAccount",
    "GET",
    "/v1/workspaces/{workspace_id}/service_accounts/{id}",
    "",
  ],
  [
    "ServiceAccountService",
    "ListServiceAccounts",
    "GET",
    "/v1/workspaces/{workspace_id}/service_accounts",
    "",
  ],
  [
    "ServiceAccountService",
    "CreateServiceAccount",
    "POST",
    "/v1/workspaces/{workspace_id}/service_accounts",
    "*",
  ],
  [
    "ServiceAccountService",
    "UpdateServiceAccount",
    "PATCH",
    "/v1/workspaces/{workspace_id}/service_accounts/{id}",
    "*",
  ],
  [
    "ServiceAccountService",
    "DeleteServiceAccount",
    "DELETE",
    "/v1/workspaces/{workspace_id}/service_accounts/{id}",
    "",
  ],
  [
    "CertificateService",
    "GetCertificateAuthority",
    "GET",
    "/v1/workspaces/{workspace_id}/certificate_authorities/{id}",
    "",
  ],
  [
    "CertificateService",
    "CreateCertificateAuthority",
    "POST",
    "/v1/workspaces/{workspace_id}/certificate_authorities",
    "*",
  ],
  [
    "CertificateService",
    "UpdateCertificateAuthority",
    "PATCH",
    "/v1/workspaces/{workspace_id}/certificate_authorities/{id}",
    "*",
  ],
  [
    "CertificateService",
    "ListCertificateAuthorities",
    "GET",
    "/v1/workspaces/{workspace_id}/certificate_authorities",
    "",
  ],
  [
    "CertificateService",
    "DeleteCertificateAuthority",
    "DELETE",
    "/v1/workspaces/{workspace_id}/certificate_authorities/{id}",
    "",
  ],
  [
    "CertificateService",
    "RolloverCertificateAuthority",
    "POST",
    "/v1/workspaces/{workspace_id}/certificate_authorities/{id}:rollover",
    "*",
  ],
  ["CertificateService", "SignSSHCertificate", "POST", "/v1/workspaces/{workspace_id}/sign-ssh", "*"],
  ["CertificateService", "SignX509Certificate", "POST", "/v1/workspaces/{workspace_id}/sign-x509", "*"],
  ["TargetService", "GetTarget", "GET", "/v1/workspaces/{workspace_id}/targets/{id}", ""],
  ["TargetService", "ListTargets", "GET", "/v1/workspaces/{workspace_id}/targets", ""],
  ["TargetService", "CreateTarget", "POST", "/v1/workspaces/{workspace_id}/targets", "*"],
  ["TargetService", "UpdateTarget", "PATCH", "/v1/workspaces/{workspace_id}/targets/{id}", "*"],
  ["TargetService", "DeleteTarget", "DELETE", "/v1/workspaces/{workspace_id}/targets/{id}", ""],
  ["TargetService", "GetSubjectAccess", "POST", "/v1/workspaces/{workspace_id}/targets/access", "*"],
  ["TargetService", "GetTargetFilters", "GET", "/v1/workspaces/{workspace_id}/targets/filters", ""],
  ["PrincipalService", "SetPrincipals", "POST", "/v1/workspaces/{workspace_id}/principals", "*"],
  ["PrincipalService", "ListPrincipals", "GET", "/v1/workspaces/{workspace_id}/principals", ""],
  ["PrincipalService", "AddSubjectsToPrincipal", "POST", "/v1/workspaces/{workspace_id}/principals:add", "*"],
  [
    "PrincipalService",
    "RemoveSubjectsFromPrincipal",
    "POST",
    "/v1/workspaces/{workspace_id}/principals:remove",
    "*",
  ],
  ["PrincipalService", "RevokeAllAccess", "POST", "/v1/workspaces/{workspace_id}/principals:revoke", "*"],
  ["DaemonService", "GetDaemon", "GET", "/v1/workspaces/{workspace_id}/daemons/{id}", ""],
  ["DaemonService", "UpdateDaemon", "PATCH", "/v1/workspaces/{workspace_id}/daemons/{id}", "*"],
  ["DaemonService", "DeleteDaemon", "DELETE", "/v1/workspaces/{workspace_id}/daemons/{id}", ""],
  ["DaemonService", "ListDaemons", "GET", "/v1/workspaces/{workspace_id}/daemons", ""],
  ["DaemonService", "RefreshEnrollToken", "POST", "/v1/workspaces/{workspace_id}/enroll:refresh", ""],
  ["DaemonService", "RevokeEnrollToken", "DELETE", "/v1/workspaces/{workspace_id}/enroll:revoke", ""],
  ["DaemonService", "ListSessions", "GET", "/v1/workspaces/{workspace_id}/daemons/{daemon_id}/sessions", ""],
  [
    "DaemonService",
    "CreateSession",
    "POST",
    "/v1/workspaces/{workspace_id}/daemons/{daemon_id}/sessions",
    "*",
  ],
  [
    "DaemonService",
    "CloseSession",
    "DELETE",
    "/v1/workspaces/{workspace_id}/daemons/{daemon_id}/sessions/{session_id}",
    "",
  ],
  ["AuthService", "Login", "POST", "/v1/login", "*"],
  ["AuthService", "LoginWithBackupCode", "POST", "/v1/login/backup-code", "*"],
  ["AuthService", "Logout", "POST", "/v1/logout", ""],
  ["AuthService", "Register", "POST", "/v1/register", "*"],
  ["AuthService", "RefreshToken", "POST", "/v1/refresh-token", ""],
  ["AuthService", "ForgotPassword", "POST", "/v1/forgot-password", "*"],
  ["AuthService", "ResetPassword", "POST", "/v1/reset-password", "*"],
  ["AuthService", "ResendVerification", "POST", "/v1/resend-verification", ""],
  ["AuthService", "VerifyEmail", "POST", "/v1/verify-email", ""],
  ["UserService", "Whoami", "GET", "/v1/whoami", ""],
  ["UserService", "UpdateProfile", "PATCH", "/v1/profile", "*"],
  ["UserService", "DeleteAccount", "DELETE", "/v1/account", ""],
  ["UserService", "ListUserDevices", "GET", "/v1/devices", ""],
  ["UserService", "DeleteUserDevice", "DELETE", "/v1/devices/{id}", ""],
  ["UserService", "ListLinkedAccounts", "GET", "/v1/accounts/oauth", ""],
  ["UserService", "UnlinkAccount", "DELETE", "/v1/accounts/oauth/{provider}", ""],
  ["UserService", "SetEmailRecovery", "PATCH", "/v1/account/email-recovery", "*"],
  ["CredentialService", "UpdatePassword", "PATCH", "/v1/credentials/password", "*"],
  ["CredentialService", "DeletePassword", "DELETE", "/v1/credentials/password", ""],
  ["CredentialService", "ListPasskeys", "GET", "/v1/credentials/passkeys", ""],
  ["CredentialService", "UpdatePasskey", "PATCH", "/v1/credentials/passkeys/{id}", "*"],
  ["CredentialService", "DeletePasskey", "DELETE", "/v1/credentials/passkeys/{id}", ""],
  ["CredentialService", "CreateBackupCodes", "POST", "/v1/credentials/backup-codes", ""],
  ["CredentialService", "ListBackupCodes", "GET", "/v1/credentials/backup-codes", ""],
  ["CredentialService", "DeleteBackupCodes", "DELETE", "/v1/credentials/backup-codes", ""],
  ["SSOService", "GetOIDCProvider", "GET", "/v1/workspaces/{workspace_id}/oidc", ""],
  ["SSOService", "UpdateOIDCProvider", "PATCH", "/v1/workspaces/{workspace_id}/oidc", "*"],
  ["SSOService", "GetSAMLProvider", "GET", "/v1/workspaces/{workspace_id}/saml", ""],
  ["SSOService", "UpdateSAMLProvider", "PATCH", "/v1/workspaces/{workspace_id}/saml", "*"],
  ["SSOService", "CheckSSO", "GET", "/v1/sso/{email}", ""],
  ["BillingService", "GetBilling", "GET", "/v1/billing/subscription", ""],
  ["BillingService", "CreatePortal", "POST", "/v1/billing/portal", ""],
  ["BillingService", "CreateCheckout", "POST", "/v1/billing/checkout", ""],
  ["BillingService", "CancelSubscription", "POST", "/v1/billing/subscription/cancel", "*"],
  ["LicenseService", "GetLicense", "GET", "/v1/license", ""],
  ["UtilService", "GetVersion", "GET", "/v1/version", ""],
  ["UtilService", "ListRoles", "GET", "/v1/roles", ""],
  ["UtilService", "ListAuditLogs", "GET", "/v1/audit", ""],
  ["UtilService", "ExportAuditLogs", "POST", "/v1/audit:export", "*"],
] as const;

// The RPCs with no google.api.http mapping.
export const unmappedRpcs = [
  ["DaemonService", "EnrollDaemon"],
  ["DaemonService", "SyncDaemon"],
  ["DaemonService", "BeginSSHSession"],
  ["DaemonService", "EndSSHSession"],
  ["DaemonService", "AppendSSHRecording"],
  ["DaemonControlService", "Connect"],
  ["DaemonSessionService", "Session"],
  ["AuthService", "StreamCLILogin"],
  ["AuthService", "VerifyCLILogin"],
] as const;

/** Routes this server adds to the contract in the reference's style (docs/passkeys.md). */
const addedRoutes = [
  // docs/access-requests.md
  [
    "AccessRequestService",
    "CreateAccessRequest",
    "POST",
    "/v1/workspaces/{workspace_id}/access_requests",
    "*",
  ],
  [
    "AccessRequestService",
    "GetAccessRequest",
    "GET",
    "/v1/workspaces/{workspace_id}/access_requests/{id}",
    "",
  ],
  ["AccessRequestService", "ListAccessRequests", "GET", "/v1/workspaces/{workspace_id}/access_requests", ""],
  [
    "AccessRequestService",
    "ApproveAccessRequest",
    "POST",
    "/v1/workspaces/{workspace_id}/access_requests/{id}:approve",
    "*",
  ],
  [
    "AccessRequestService",
    "DenyAccessRequest",
    "POST",
    "/v1/workspaces/{workspace_id}/access_requests/{id}:deny",
    "*",
  ],
  [
    "AccessRequestService",
    "WithdrawAccessRequest",
    "POST",
    "/v1/workspaces/{workspace_id}/access_requests/{id}:withdraw",
    "*",
  ],
  ["CredentialService", "BeginPasskeyRegistration", "POST", "/v1/credentials/passkeys:begin", "*"],
  ["CredentialService", "FinishPasskeyRegistration", "POST", "/v1/credentials/passkeys:finish", "*"],
  ["AuthService", "BeginPasskeyLogin", "POST", "/v1/login/passkey:begin", "*"],
  ["AuthService", "FinishPasskeyLogin", "POST", "/v1/login/passkey:finish", "*"],
  // docs/audit.md
  ["UtilService", "GetAuditSigningKey", "GET", "/v1/audit/signing-key", ""],
  ["UtilService", "ExportAuditChain", "POST", "/v1/audit:exportChain", "*"],
  // docs/webhooks.md
  ["WebhookService", "CreateWebhookEndpoint", "POST", "/v1/workspaces/{workspace_id}/webhooks", "*"],
  ["WebhookService", "ListWebhookEndpoints", "GET", "/v1/workspaces/{workspace_id}/webhooks", ""],
  ["WebhookService", "GetWebhookEndpoint", "GET", "/v1/workspaces/{workspace_id}/webhooks/{id}", ""],
  ["WebhookService", "UpdateWebhookEndpoint", "PATCH", "/v1/workspaces/{workspace_id}/webhooks/{id}", "*"],
  ["WebhookService", "DeleteWebhookEndpoint", "DELETE", "/v1/workspaces/{workspace_id}/webhooks/{id}", ""],
  [
    "WebhookService",
    "RotateWebhookSecret",
    "POST",
    "/v1/workspaces/{workspace_id}/webhooks/{id}:rotateSecret",
    "*",
  ],
  [
    "WebhookService",
    "ListWebhookDeliveries",
    "GET",
    "/v1/workspaces/{workspace_id}/webhooks/{id}/deliveries",
    "",
  ],
  ["WebhookService", "SendTestWebhook", "POST", "/v1/workspaces/{workspace_id}/webhooks/{id}:test", "*"],
  [
    "WebhookService",
    "ReplayWebhookEvents",
    "POST",
    "/v1/workspaces/{workspace_id}/webhooks/{id}:replay",
    "*",
  ],
  // docs/recordings.md
  ["RecordingService", "ListRecordings", "GET", "/v1/workspaces/{workspace_id}/recordings", ""],
  ["RecordingService", "GetRecording", "GET", "/v1/workspaces/{workspace_id}/recordings/{recording_id}", ""],
  [
    "RecordingService",
    "DeleteRecording",
    "DELETE",
    "/v1/workspaces/{workspace_id}/recordings/{recording_id}",
    "",
  ],
  // docs/certificates.md: the issuance ledger, revocation and staged rotation
  [
    "CertificateService",
    "ListIssuedCertificates",
    "GET",
    "/v1/workspaces/{workspace_id}/issued_certificates",
    "",
  ],
  [
    "CertificateService",
    "GetIssuedCertificate",
    "GET",
    "/v1/workspaces/{workspace_id}/issued_certificates/{id}",
    "",
  ],
  [
    "CertificateService",
    "RevokeCertificate",
    "POST",
    "/v1/workspaces/{workspace_id}/issued_certificates:revoke",
    "*",
  ],
  [
    "CertificateService",
    "GetRevocationList",
    "GET",
    "/v1/workspaces/{workspace_id}/certificate_authorities/{ca_id}/revocation_list",
    "",
  ],
  [
    "CertificateService",
    "RotateCertificateAuthority",
    "POST",
    "/v1/workspaces/{workspace_id}/certificate_authorities/{id}:rotate",
    "*",
  ],
  // docs/certificates.md (passkey step-up)
  ["CertificateService", "BeginSSHStepUp", "POST", "/v1/workspaces/{workspace_id}/ssh-step-ups", "*"],
  ["CertificateService", "GetSSHStepUp", "GET", "/v1/workspaces/{workspace_id}/ssh-step-ups/{id}", ""],
  [
    "CertificateService",
    "CompleteSSHStepUp",
    "POST",
    "/v1/workspaces/{workspace_id}/ssh-step-ups/{id}:complete",
    "*",
  ],
] as const;

const uuid = "3f1c2a9e-8b7d-4c6e-9a5f-0d1e2f3a4b5c";
// Raw (as sent in the URL) and decoded sample values for the non-uuid path parameters of §3 #9.
const samples: Record<string, { raw: string; value: string }> = {
  domain: { raw: "app.example.co.uk", value: "app.example.co.uk" },
  token: { raw: "inv_Zk9-x_Q2", value: "inv_Zk9-x_Q2" },
  email: { raw: "alice%40example.com", value: "alice@example.com" },
  provider: { raw: "github", value: "github" },
};

/** Substitutes a sample for every `{variable}` of a template; independent of the module's parser. */
function examplePath(template: string): { path: string; params: Record<string, string> } {
  const params: Record<string, string> = {};
  let n = 0;
  const path = template.replace(/\{([a-z_]+)\}/g, (_, name: string) => {
    const sample = samples[name] ?? { raw: uuid.replace(/^3/, String(++n % 10)), value: "" };
    params[name] = sample.value || sample.raw;
    return sample.raw;
  });
  return { path, params };
}

const routes = createRestRoutes(allServices);

function matched(httpMethod: string, path: string): RestMatch {
  const result = routes.match(httpMethod, path);
  if (result === null || !("method" in result)) {
    throw new Error(`${httpMethod} ${path}: expected a route, got ${JSON.stringify(result)}`);
  }
  return result;
}

const rpcName = (m: DescMethod): string => `${m.parent.name}.${m.name}`;

describe("createRestRoutes", () => {
  it("compiles exactly the 102 annotated RPCs (plus this server's additions) and none of the 6 unmapped ones", () => {
    expect(routes.routes).toHaveLength(102 + addedRoutes.length);
    expect(referenceRoutes).toHaveLength(102);
    const names = new Set(routes.routes.map((r) => rpcName(r.method)));
    for (const [service, rpc] of unmappedRpcs) expect(names.has(`${service}.${rpc}`)).toBe(false);
  });

  it("agrees with the contract (and the documented additions) on every method, template and body rule", () => {
    const compiled = routes.routes.map((r) => [
      r.method.parent.name,
      r.method.name,
      r.httpMethod,
      r.template.source,
      r.rule.body,
    ]);
    expect(compiled.sort()).toEqual([...referenceRoutes, ...addedRoutes].map((r) => [...r]).sort());
  });

  describe.each([...referenceRoutes, ...addedRoutes])(
    "%s.%s (%s %s)",
    (service, rpc, httpMethod, template) => {
      it("routes its example path to exactly that RPC", () => {
        const { path, params } = examplePath(template);
        const m = matched(httpMethod, path);
        expect(rpcName(m.method)).toBe(`${service}.${rpc}`);
        expect(m.template).toBe(template);
        expect({ ...m.pathParams }).toEqual(params);
      });
    },
  );

  it("leaves the Connect-only RPCs unroutable", () => {
    for (const [service, rpc] of unmappedRpcs) {
      for (const method of ["GET", "POST"]) {
        expect(routes.match(method, `/platform.v1.${service}/${rpc}`)).toBeNull();
      }
    }
  });

  it("reports the method kind of the server stream it routes", () => {
    const m = matched("GET", `/v1/workspaces/${uuid}/events:subscribe`);
    expect(m.method.name).toBe("SubscribeWorkspaceEvents");
    expect(m.method.methodKind).toBe("server_streaming");
  });
});

describe("match precedence", () => {
  it("prefers a literal segment over a variable", () => {
    expect(matched("GET", `/v1/workspaces/${uuid}/targets/filters`).method.name).toBe("GetTargetFilters");
    expect(matched("GET", `/v1/workspaces/${uuid}/targets/${uuid}`).method.name).toBe("GetTarget");
    expect(matched("POST", `/v1/workspaces/${uuid}/targets/access`).method.name).toBe("GetSubjectAccess");
    expect(matched("PATCH", `/v1/workspaces/${uuid}/settings`).method.name).toBe("UpdateWorkspaceSettings");
  });

  it("routes by method before specificity, as Envoy and grpc-gateway do", () => {
    // No GET on the literal `access`, so GetTarget takes it and the id's validation rejects "access".
    const m = matched("GET", `/v1/workspaces/${uuid}/targets/access`);
    expect(m.method.name).toBe("GetTarget");
    expect(m.pathParams.id).toBe("access");
  });

  it("splits the custom verb at the last colon of the last segment", () => {
    const verify = matched("POST", `/v1/workspaces/${uuid}/domains/sub.example.com:verify`);
    expect(verify.method.name).toBe("VerifyWorkspaceDomain");
    expect(verify.pathParams.domain).toBe("sub.example.com");
    const generate = matched("POST", `/v1/workspaces/${uuid}/domains/a:b.example.com:generate`);
    expect(generate.method.name).toBe("RegenerateWorkspaceDomainToken");
    expect(generate.pathParams.domain).toBe("a:b.example.com");
    expect(matched("POST", "/v1/audit:export").method.name).toBe("ExportAuditLogs");
    expect(matched("GET", "/v1/audit").method.name).toBe("ListAuditLogs");
    expect(matched("POST", `/v1/workspaces/${uuid}/principals:add`).method.name).toBe(
      "AddSubjectsToPrincipal",
    );
    expect(matched("POST", `/v1/workspaces/${uuid}/principals`).method.name).toBe("SetPrincipals");
  });

  it("lets a variable keep a colon when no verb template matches", () => {
    const m = matched("GET", "/v1/invites/abc:def");
    expect(m.method.name).toBe("GetInvitation");
    expect(m.pathParams.token).toBe("abc:def");
  });

  it("rejects unknown verbs and verbs on the wrong path", () => {
    expect(routes.match("POST", "/v1/audit:import")).toBeNull();
    expect(routes.match("POST", `/v1/workspaces/${uuid}/teams:verify`)).toBeNull();
  });
});

describe("one path, several methods", () => {
  const cases: [string, [string, string][]][] = [
    [
      "/v1/invites/tok",
      [
        ["GET", "GetInvitation"],
        ["POST", "AcceptInvitation"],
      ],
    ],
    [
      `/v1/workspaces/${uuid}/members/${uuid}`,
      [
        ["GET", "GetWorkspaceMember"],
        ["DELETE", "RemoveWorkspaceMember"],
        ["POST", "UpdateWorkspaceMember"],
      ],
    ],
    [
      `/v1/workspaces/${uuid}/principals`,
      [
        ["GET", "ListPrincipals"],
        ["POST", "SetPrincipals"],
      ],
    ],
    [
      "/v1/credentials/password",
      [
        ["PATCH", "UpdatePassword"],
        ["DELETE", "DeletePassword"],
      ],
    ],
    [
      "/v1/credentials/backup-codes",
      [
        ["POST", "CreateBackupCodes"],
        ["GET", "ListBackupCodes"],
        ["DELETE", "DeleteBackupCodes"],
      ],
    ],
  ];
  it.each(cases)("%s", (path, methods) => {
    for (const [httpMethod, rpc] of methods) expect(matched(httpMethod, path).method.name).toBe(rpc);
    // Method names are case-insensitive.
    expect(matched(methods[0]![0].toLowerCase(), path).method.name).toBe(methods[0]![1]);
  });
});

describe("405 and 404", () => {
  it("lists the allowed methods of a known path", () => {
    expect(routes.match("PUT", `/v1/workspaces/${uuid}`)).toEqual({
      allowedMethods: ["GET", "PATCH", "DELETE"],
    });
    expect(routes.match("GET", "/v1/login")).toEqual({ allowedMethods: ["POST"] });
    expect(routes.match("PUT", "/v1/credentials/backup-codes")).toEqual({
      allowedMethods: ["GET", "POST", "DELETE"],
    });
    expect(routes.match("GET", "/v1/audit:export")).toEqual({ allowedMethods: ["POST"] });
    expect(routes.match("DELETE", `/v1/workspaces/${uuid}/domains/x.example.com:verify`)).toEqual({
      allowedMethods: ["POST"],
    });
  });

  it("returns null for unknown paths", () => {
    for (const path of [
      "/",
      "",
      "v1/workspaces",
      "/v1",
      "/v2/workspaces",
      "/v1/workspaces/",
      `/v1/workspaces//members`,
      `/v1/workspaces/${uuid}/members/${uuid}/extra`,
      "/v1/sso",
    ]) {
      expect(routes.match("GET", path), path).toBeNull();
    }
  });
});

describe("path parameters", () => {
  it("are percent-decoded", () => {
    expect(matched("GET", "/v1/sso/alice%40example.com").pathParams).toEqual({ email: "alice@example.com" });
    expect(matched("GET", "/v1/sso/a%2Fb%20c").pathParams.email).toBe("a/b c");
    expect(matched("DELETE", "/v1/credentials/passkeys/cred%2B1").pathParams.id).toBe("cred+1");
    // `+` is only a space in query strings.
    expect(matched("DELETE", "/v1/credentials/passkeys/a+b").pathParams.id).toBe("a+b");
  });

  it("match percent-encoded literals", () => {
    expect(matched("GET", "/%76%31/version").method.name).toBe("GetVersion");
  });

  it("reject invalid percent-encoding with InvalidArgumentError naming the field", () => {
    expect(() => routes.match("GET", "/v1/sso/%E0%A4%A")).toThrow(InvalidArgumentError);
    expect(() => routes.match("GET", "/v1/sso/%zz")).toThrow(/\{email\}/);
  });
});
