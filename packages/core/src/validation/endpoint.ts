/**
 * The one form of a target endpoint, for every RPC that sets one and every client that dials
 * one: a host name or an IP address, with an optional port; an IPv6 address with a port goes in
 * brackets. Nothing else is an endpoint: clients pass endpoints to programs such as `ssh`, where
 * a value starting with `-` or holding spaces, quotes or `%` would be read as something else.
 *
 * @module
 */
import { isIP } from "node:net";
import { isHostname } from "./hostname.js";

/** An endpoint taken apart; `port` is undefined when the endpoint names none. */
export interface EndpointParts {
  readonly host: string;
  readonly port: number | undefined;
  readonly kind: "hostname" | "ipv4" | "ipv6";
}

/** The expected form, in words, for error messages and forms. */
export const endpointForm =
  "a host name or an IP address with an optional port (web-01.internal, 10.0.0.5:4022, [fd00::5]:4022)";

const portOf = (text: string | undefined): number | null | undefined => {
  if (text === undefined) return undefined;
  if (!/^[1-9][0-9]{0,4}$/.test(text)) return null;
  const port = Number(text);
  return port <= 65_535 ? port : null;
};

/**
 * The parts of `value` when it is an endpoint (`host`, `host:port`, `ipv4`, `ipv4:port`, `ipv6`,
 * `[ipv6]`, `[ipv6]:port`), else null.
 */
export function parseEndpoint(value: string): EndpointParts | null {
  const bracketed = /^\[([0-9A-Fa-f:.]+)\](?::([^:]*))?$/.exec(value);
  if (bracketed) {
    const port = portOf(bracketed[2]);
    return isIP(bracketed[1]!) === 6 && port !== null ? { host: bracketed[1]!, port, kind: "ipv6" } : null;
  }
  if (/^[0-9A-Fa-f:.]+$/.test(value) && isIP(value) === 6)
    return { host: value, port: undefined, kind: "ipv6" };
  const colon = value.indexOf(":");
  const host = colon < 0 ? value : value.slice(0, colon);
  const port = portOf(colon < 0 ? undefined : value.slice(colon + 1));
  if (port === null) return null;
  if (isIP(host) === 4) return { host, port, kind: "ipv4" };
  return isHostname(host) ? { host, port, kind: "hostname" } : null;
}

/** Whether `value` is an endpoint ({@link parseEndpoint}). */
export const isEndpoint = (value: string) => parseEndpoint(value) !== null;
