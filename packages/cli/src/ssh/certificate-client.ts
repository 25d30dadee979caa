/**
 * The one client `wap ssh` needs when it knows the rest from its cache: certificates. Built
 * alone, so that only that part of the contract is loaded.
 *
 * @module
 */
import { createClient, type Transport } from "@connectrpc/connect";
import { CertificateService } from "@wap/api/gen/platform/v1/certificates_pb";

export const certificateClients = (transport: Transport) => ({
  certificates: createClient(CertificateService, transport),
});
