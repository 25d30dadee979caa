/**
 * The clients `wap ssh` calls when it asks the server (login-plan.ts): workspaces, access,
 * access requests, certificates. Built alone, so that only those parts of the contract load.
 *
 * @module
 */
import { createClient, type Transport } from "@connectrpc/connect";
import { AccessRequestService } from "@wap/api/gen/platform/v1/access_request_pb";
import { CertificateService } from "@wap/api/gen/platform/v1/certificates_pb";
import { TargetService } from "@wap/api/gen/platform/v1/target_pb";
import { WorkspaceService } from "@wap/api/gen/platform/v1/workspace_pb";

export const loginClients = (transport: Transport) => ({
  workspaces: createClient(WorkspaceService, transport),
  targets: createClient(TargetService, transport),
  accessRequests: createClient(AccessRequestService, transport),
  certificates: createClient(CertificateService, transport),
});
