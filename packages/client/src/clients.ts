import { type Client, createClient, type Transport } from "@connectrpc/connect";
import {
  AccessRequestService,
  AuthService,
  BillingService,
  CertificateService,
  CredentialService,
  DaemonControlService,
  DaemonService,
  DaemonSessionService,
  InvitationService,
  LicenseService,
  PrincipalService,
  RecordingService,
  ServiceAccountService,
  SSOService,
  TargetService,
  TeamService,
  UserService,
  UtilService,
  WebhookService,
  WorkspaceDomainService,
  WorkspaceService,
} from "@wap/api";

/** One typed client per service of the platform.v1 contract, over one transport. */
export interface ServiceClients {
  readonly workspaces: Client<typeof WorkspaceService>;
  readonly domains: Client<typeof WorkspaceDomainService>;
  readonly invitations: Client<typeof InvitationService>;
  readonly teams: Client<typeof TeamService>;
  readonly serviceAccounts: Client<typeof ServiceAccountService>;
  readonly certificates: Client<typeof CertificateService>;
  readonly targets: Client<typeof TargetService>;
  readonly principals: Client<typeof PrincipalService>;
  readonly daemons: Client<typeof DaemonService>;
  readonly daemonControl: Client<typeof DaemonControlService>;
  readonly daemonSessions: Client<typeof DaemonSessionService>;
  readonly auth: Client<typeof AuthService>;
  readonly users: Client<typeof UserService>;
  readonly credentials: Client<typeof CredentialService>;
  readonly sso: Client<typeof SSOService>;
  readonly billing: Client<typeof BillingService>;
  readonly license: Client<typeof LicenseService>;
  readonly util: Client<typeof UtilService>;
  readonly recordings: Client<typeof RecordingService>;
  readonly accessRequests: Client<typeof AccessRequestService>;
  readonly webhooks: Client<typeof WebhookService>;
}

/** Builds the typed clients of every service over `transport`. */
export function createServiceClients(transport: Transport): ServiceClients {
  return {
    workspaces: createClient(WorkspaceService, transport),
    domains: createClient(WorkspaceDomainService, transport),
    invitations: createClient(InvitationService, transport),
    teams: createClient(TeamService, transport),
    serviceAccounts: createClient(ServiceAccountService, transport),
    certificates: createClient(CertificateService, transport),
    targets: createClient(TargetService, transport),
    principals: createClient(PrincipalService, transport),
    daemons: createClient(DaemonService, transport),
    daemonControl: createClient(DaemonControlService, transport),
    daemonSessions: createClient(DaemonSessionService, transport),
    auth: createClient(AuthService, transport),
    users: createClient(UserService, transport),
    credentials: createClient(CredentialService, transport),
    sso: createClient(SSOService, transport),
    billing: createClient(BillingService, transport),
    license: createClient(LicenseService, transport),
    util: createClient(UtilService, transport),
    recordings: createClient(RecordingService, transport),
    accessRequests: createClient(AccessRequestService, transport),
    webhooks: createClient(WebhookService, transport),
  };
}
