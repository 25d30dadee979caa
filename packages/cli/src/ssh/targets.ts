/**
 * How `ssh` reaches a target: its endpoints, the known_hosts lines that make ssh trust the host
 * certificates of the workspace's CAs (StrictHostKeyChecking yes), and the options naming the
 * user certificate.
 *
 * @module
 */
import { isIPv6 } from "node:net";
import type { CertificateAuthority, Target } from "@wap/api";
import { withoutComment } from "./agent.js";

export interface Endpoint {
  readonly host: string;
  readonly port: number;
}

/** `10.0.0.5:4022`, `[fd00::5]:4022`, `host` (port 22). */
export function parseEndpoint(text: string): Endpoint {
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(text);
  if (bracketed) return { host: bracketed[1]!, port: Number(bracketed[2] ?? 22) };
  if (isIPv6(text)) return { host: text, port: 22 };
  const match = /^(.*?)(?::(\d+))?$/.exec(text)!;
  return { host: match[1]!, port: Number(match[2] ?? 22) };
}

/** How known_hosts names a host: `host` on port 22, `[host]:port` otherwise. */
export const knownHostsName = ({ host, port }: Endpoint) => (port === 22 ? host : `[${host}]:${port}`);

/**
 * The name ssh checks the host certificate against. Host certificates name the target's id as
 * their principal, so ssh is told to look for that name rather than the address it dials.
 */
export const hostKeyAlias = (target: Target) => target.id;

/** Every name ssh may look a target up by: its alias, its name, each endpoint. */
export function knownHostsPatterns(target: Target): string[] {
  const names = [hostKeyAlias(target), target.name];
  for (const endpoint of target.endpoints.map(parseEndpoint)) {
    names.push(endpoint.host, knownHostsName(endpoint));
  }
  return [...new Set(names)];
}

/**
 * Every key the authority asks clients to trust now (the current key, the next one during a
 * staged rotation, retired keys whose certificates are still valid), as the server lists them;
 * the authority's key alone from a server that does not list them.
 */
function trustedKeyLines(ca: CertificateAuthority): string[] {
  const keys = ca.trustedKeys.length > 0 ? ca.trustedKeys.map((key) => key.publicKey) : [ca.publicKey];
  return keys.flatMap((key) => key.split("\n")).filter((line) => line.trim() !== "");
}

/** One `@cert-authority` line per SSH authority key, for the targets it signs host certificates for. */
export function knownHostsFile(
  authorities: readonly CertificateAuthority[],
  targets: readonly Target[],
): string {
  const lines = ["# Written by wap: the certificate authorities of this workspace's hosts."];
  for (const ca of authorities) {
    const patterns = [...new Set(targets.filter((t) => t.caId === ca.id).flatMap(knownHostsPatterns))];
    if (patterns.length === 0) continue;
    for (const key of trustedKeyLines(ca)) {
      lines.push(`@cert-authority ${patterns.join(",")} ${withoutComment(key)}`);
    }
  }
  return `${lines.join("\n")}\n`;
}

export interface SshFiles {
  readonly identityFile: string;
  readonly certificateFile: string;
  readonly knownHostsFile: string;
}

/** ssh_config settings (name, value) shared by `wap ssh` and `wap config ssh`. */
export function sshSettings(files: SshFiles, target: Target): Array<[string, string]> {
  return [
    ["IdentityFile", files.identityFile],
    ["CertificateFile", files.certificateFile],
    ["IdentitiesOnly", "yes"],
    ["UserKnownHostsFile", files.knownHostsFile],
    ["StrictHostKeyChecking", "yes"],
    ["HostKeyAlias", hostKeyAlias(target)],
  ];
}
