/**
 * The parts of connect-es's protocol implementation this server builds its lean paths from (the
 * unary Connect path, the agent's control stream, the REST error mapping): serializers, envelope
 * codecs, content types, error bodies and the code-to-HTTP-status table.
 *
 * connect-es exports them from `@connectrpc/connect/protocol` and `/protocol-connect` but marks
 * them internal, outside semantic versioning. Every import of them goes through this module, and
 * `connect-protocol.test.ts` fails when the installed connect-es is not the version they were
 * checked against, so an upgrade is a deliberate step: re-run the comparison suite
 * (test/unary-connect.test.ts), then move the pin.
 *
 * @module
 */
export type {
  Compression,
  MethodSerializationLookup,
  UniversalHandler,
  UniversalServerRequest,
  UniversalServerResponse,
} from "@connectrpc/connect/protocol";
export {
  compressedFlag,
  compressionNegotiate,
  createMethodSerializationLookup,
  encodeEnvelope,
  transformSplitEnvelope,
  validateReadWriteMaxBytes,
} from "@connectrpc/connect/protocol";
export {
  codeToHttpStatus,
  contentTypeUnaryJson,
  contentTypeUnaryProto,
  endStreamFlag,
  endStreamToJson,
  errorToJsonBytes,
  parseContentType,
} from "@connectrpc/connect/protocol-connect";

/** The connect-es release these internals were checked against (connect and connect-node alike). */
export const checkedConnectVersion = "2.1.2";
