/**
 * The forms of the strings the platform hands to `ssh` and writes into its files: endpoints,
 * login and resource names, and text without control characters. The server refuses anything
 * else; the CLI and the agent check again what a server sent before it reaches ssh, a file or a
 * terminal. One definition, used by both.
 *
 * @module
 */
import { isIP } from "node:net";

/** Names of resources (targets, teams, authorities): a letter or digit, then letters, digits, `_` and `-`. */
export const resourceNamePattern = /^[a-zA-Z0-9][a-zA-Z0-9_-]*$/;

/** Unix login names, as Debian's adduser accepts them by default (a trailing `$` for machine accounts). */
export const loginNamePattern = /^[a-z_][a-z0-9_-]*\$?$/;

/**
 * Characters that change how text is shown or read rather than what it says: C0 and C1 controls
 * (NUL, tab, CR, LF, ESC, …), DEL, the Unicode line and paragraph separators, and the
 * bidirectional embeddings, overrides and isolates.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point.
export const controlCharacters = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/u;

/** Whether `value` holds any of {@link controlCharacters}. */
export const hasControlCharacters = (value: string) => controlCharacters.test(value);

/**
 * The contract's `hostname` rule (protovalidate's): labels of 1 to 63 characters from
 * [A-Za-z0-9-] that neither start nor end with '-', at most 253 characters in all, an optional
 * trailing dot, and a last label that is not all digits.
 */
const label = /^[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?$/;

export function isHostname(value: string): boolean {
  if (value.length > 253) return false;
  const labels = (value.endsWith(".") ? value.slice(0, -1) : value).split(".");
  for (const part of labels) {
    if (part.length === 0 || part.length > 63 || !label.test(part)) return false;
  }
  return !/^[0-9]+$/.test(labels[labels.length - 1] ?? "");
}

/**
 * Target endpoints: a host name or an IP address, with an optional port; an IPv6 address with a
 * port goes in brackets. Nothing else is an endpoint: clients pass endpoints to programs such as
 * `ssh`, where a value starting with `-` or holding spaces, quotes or `%` would be read as
 * something else.
 */
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
