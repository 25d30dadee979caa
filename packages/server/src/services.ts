/**
 * The 18 services of the platform.v1 contract: Connect serves all of them, REST the methods that
 * carry a google.api.http rule.
 *
 * @module
 */
import type { DescService } from "@bufbuild/protobuf";
import {
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
  ServiceAccountService,
  SSOService,
  TargetService,
  TeamService,
  UserService,
  UtilService,
  WorkspaceDomainService,
  WorkspaceService,
} from "@wap/core/api";

export const platformServices: readonly DescService[] = [
  WorkspaceService,
  WorkspaceDomainService,
  InvitationService,
  TeamService,
  ServiceAccountService,
  CertificateService,
  TargetService,
  PrincipalService,
  DaemonService,
  DaemonControlService,
  DaemonSessionService,
  AuthService,
  UserService,
  CredentialService,
  SSOService,
  BillingService,
  LicenseService,
  UtilService,
];
