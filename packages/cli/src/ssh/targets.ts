/**
 * How `ssh` reaches a target: its endpoints, the known_hosts lines that make ssh trust the host
 * certificates of the workspace's CAs (StrictHostKeyChecking yes), and the options naming the
 * user certificate.
 *
 * @module
 */
import { join } from "node:path";
import type { CertificateAuthority, GetSubjectAccessResponse, Target } from "@wap/api";
import { endpointForm, loginNamePattern, parseEndpoint, resourceNamePattern } from "@wap/ssh-wire/forms";
import type { ConfigStore } from "../config.js";
import { CliError } from "../exit-codes.js";
import { withoutComment } from "./agent.js";

/** What of a target reaches ssh: its id (the host certificate's name), its name, its endpoints. */
export type TargetAddress = Pick<Target, "id" | "name" | "endpoints">;

export interface Endpoint {
  readonly host: string;
  readonly port: number;
}

/**
 * `10.0.0.5:4022`, `[fd00::5]:4022`, `host` (port 22); undefined for anything that is not a host
 * name or an IP address with an optional port (the server's own rule), which wap never hands to ssh.
 */
export function endpointOf(text: string): Endpoint | undefined {
  const parts = parseEndpoint(text);
  return parts === null ? undefined : { host: parts.host, port: parts.port ?? 22 };
}

const idPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Whether `value` is an id as the server writes them (a lower-case UUID). */
export const isId = (value: string) => idPattern.test(value);
const quoted = (value: string) => JSON.stringify(value);

/**
 * Why wap will not write this target into ssh's files or arguments, or undefined when every
 * string of it that reaches ssh has the form the server enforces: an id, a target name, endpoints.
 * A server answers only what its rules accepted; anything else came from a row written before a
 * rule existed, or from a server that is not ours.
 */
export function targetProblem(target: TargetAddress): string | undefined {
  if (!isId(target.id)) return `its id ${quoted(target.id)} is not a UUID`;
  if (!resourceNamePattern.test(target.name)) return `its name ${quoted(target.name)} is not a target name`;
  const bad = target.endpoints.find((e) => endpointOf(e) === undefined);
  if (bad !== undefined) return `its endpoint ${quoted(bad)} is not ${endpointForm}`;
  return undefined;
}

/** Whether `login` is a Unix login name, the only form wap passes to ssh as a user. */
export const isLoginName = (login: string) => login.length <= 32 && loginNamePattern.test(login);

/** The endpoints of a target, refused with a clear message when any is not one. */
export function usableEndpoints(target: TargetAddress): Endpoint[] {
  const problem = targetProblem(target);
  if (problem !== undefined) {
    throw new CliError(
      `wap will not connect to ${quoted(target.name)}: ${problem}; ask a workspace administrator to correct the target`,
    );
  }
  return target.endpoints.map((e) => endpointOf(e)!);
}

/** How known_hosts names a host: `host` on port 22, `[host]:port` otherwise. */
export const knownHostsName = ({ host, port }: Endpoint) => (port === 22 ? host : `[${host}]:${port}`);

/**
 * The name ssh checks the host certificate against. Host certificates name the target's id as
 * their principal, so ssh is told to look for that name rather than the address it dials.
 */
export const hostKeyAlias = (target: Pick<Target, "id">) => target.id;

/** Every name ssh may look a target up by: its alias, its name, each endpoint. */
export function knownHostsPatterns(target: Target): string[] {
  const names = [hostKeyAlias(target), target.name];
  for (const endpoint of usableEndpoints(target)) {
    names.push(endpoint.host, knownHostsName(endpoint));
  }
  return [...new Set(names)];
}

/** `<type> <base64>`: a public key line with nothing that known_hosts could read as more. */
const keyLine = /^[a-z][a-z0-9@.-]* [A-Za-z0-9+/]+={0,3}$/;

/**
 * Every key the authority asks clients to trust now (the current key, the next one during a
 * staged rotation, retired keys whose certificates are still valid), as the server lists them;
 * the authority's key alone from a server that does not list them.
 */
function trustedKeyLines(ca: CertificateAuthority): string[] {
  const keys = ca.trustedKeys.length > 0 ? ca.trustedKeys.map((key) => key.publicKey) : [ca.publicKey];
  return keys.flatMap((key) => key.split("\n")).filter((line) => line.trim() !== "");
}

/**
 * One `@cert-authority` line per trusted key of each SSH authority, for the targets it signs host
 * certificates for. Targets and key lines not of the server's forms are left out, so no name can
 * become a pattern such as `*` or a second entry.
 */
export function knownHostsFile(
  authorities: readonly CertificateAuthority[],
  targets: readonly Target[],
): string {
  const lines = ["# Written by wap: the certificate authorities of this workspace's hosts."];
  const usable = targets.filter((t) => targetProblem(t) === undefined);
  for (const ca of authorities) {
    const patterns = [...new Set(usable.filter((t) => t.caId === ca.id).flatMap(knownHostsPatterns))];
    if (patterns.length === 0) continue;
    for (const key of trustedKeyLines(ca).map(withoutComment)) {
      if (keyLine.test(key)) lines.push(`@cert-authority ${patterns.join(",")} ${key}`);
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
export function sshSettings(files: SshFiles, target: Pick<Target, "id">): Array<[string, string]> {
  return [
    ["IdentityFile", files.identityFile],
    ["CertificateFile", files.certificateFile],
    ["IdentitiesOnly", "yes"],
    ["UserKnownHostsFile", files.knownHostsFile],
    ["StrictHostKeyChecking", "yes"],
    ["HostKeyAlias", hostKeyAlias(target)],
  ];
}

export function knownHostsPath(store: ConfigStore, workspaceId: string): string {
  // The id names a file: only ever a UUID, never a path.
  if (!isId(workspaceId))
    throw new CliError(`the server named a workspace ${JSON.stringify(workspaceId)}, which is not an id`);
  return join(store.sshDir, `known_hosts-${workspaceId}`);
}

/** Writes the workspace's known_hosts file (its host CAs) and returns its path. */
export async function writeKnownHosts(
  store: ConfigStore,
  workspaceId: string,
  access: GetSubjectAccessResponse,
): Promise<string> {
  const path = knownHostsPath(store, workspaceId);
  const text = knownHostsFile(access.certificateAuthorities, access.targets);
  // Usually unchanged since the last command: one read instead of a rewrite.
  if ((await store.readFile(path)) !== text) await store.writeFile(path, text);
  return path;
}
