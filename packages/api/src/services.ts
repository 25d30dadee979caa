/**
 * The list of services, kept by hand in the order of the reference (later additions last): the
 * order in which the server registers routes and the client builds its service clients. A test
 * checks that it names every service generated from the protos.
 */
import { AccessRequestService as _AccessRequest } from "./gen/platform/v1/access_request_pb.js";
import { AuthService as _Auth } from "./gen/platform/v1/auth_pb.js";
import { BillingService as _Billing } from "./gen/platform/v1/billing_pb.js";
import { CertificateService as _Certificate } from "./gen/platform/v1/certificates_pb.js";
import { CredentialService as _Credential } from "./gen/platform/v1/credential_pb.js";
import {
  DaemonService as _Daemon,
  DaemonControlService as _DaemonControl,
  DaemonSessionService as _DaemonSession,
} from "./gen/platform/v1/daemon_pb.js";
import { InvitationService as _Invitation } from "./gen/platform/v1/invitation_pb.js";
import { LicenseService as _License } from "./gen/platform/v1/license_pb.js";
import { PrincipalService as _Principal } from "./gen/platform/v1/principal_pb.js";
import { RecordingService as _Recording } from "./gen/platform/v1/recording_pb.js";
import { ServiceAccountService as _ServiceAccount } from "./gen/platform/v1/service_account_pb.js";
import { SSOService as _SSO } from "./gen/platform/v1/sso_pb.js";
import { TargetService as _Target } from "./gen/platform/v1/target_pb.js";
import { TeamService as _Team } from "./gen/platform/v1/team_pb.js";
import { UserService as _User } from "./gen/platform/v1/user_pb.js";
import { UtilService as _Util } from "./gen/platform/v1/util_pb.js";
import { WebhookService as _Webhook } from "./gen/platform/v1/webhook_pb.js";
import { WorkspaceDomainService as _WorkspaceDomain } from "./gen/platform/v1/workspace_domain_pb.js";
import { WorkspaceService as _Workspace } from "./gen/platform/v1/workspace_pb.js";

/** Every service of the platform.v1 contract, in the order of the reference (later additions last). */
export const platformServices = [
  _Workspace,
  _WorkspaceDomain,
  _Invitation,
  _Team,
  _ServiceAccount,
  _Certificate,
  _Target,
  _Principal,
  _Daemon,
  _DaemonControl,
  _DaemonSession,
  _Auth,
  _User,
  _Credential,
  _SSO,
  _Billing,
  _License,
  _Util,
  _Recording,
  _AccessRequest,
  _Webhook,
] as const;
