/**
 * The signed HTTP/2 connection to the server, loaded by a session only when a command calls the
 * server: a command that needs no call loads neither the client nor Node's HTTP/2.
 *
 * @module
 */
export { createDaemonTransport, createPlatformSigner } from "@wap/client/signed-transport";
