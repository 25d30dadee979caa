/**
 * The one form of a target endpoint, for every RPC that sets one and every client that dials
 * one, defined in @wap/ssh-wire with the other forms the clients check again.
 *
 * @module
 */
export { endpointForm, isEndpoint, parseEndpoint } from "@wap/ssh-wire/forms";
