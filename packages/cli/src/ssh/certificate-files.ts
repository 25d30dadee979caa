/**
 * User certificates for SSH, one per certificate authority (a certificate is valid on every
 * target of its CA): a fresh Ed25519 key for each certificate, kept only in the ssh-agent (with
 * the certificate's lifetime) when one runs, otherwise as a 0600 file next to it.
 *
 *     ssh/<ca id>            the private key (only without an agent)
 *     ssh/<ca id>.pub        its public key (how ssh finds the key in the agent)
 *     ssh/<ca id>-cert.pub   the certificate
 *
 * A login held on request gets a certificate of its own, asked for the target so that the server
 * binds it to the approved request (its validity ends with the approval; its key id names the
 * request), kept apart by the request's id:
 *
 *     ssh/<ca id>-request-<request id>   (and .pub, -cert.pub)
 *
 * A login whose grants all carry limits gets a certificate signed for that login of that target,
 * fresh at each use (it may be pinned to the address the server sees then):
 *
 *     ssh/<ca id>.<target id>.<login>      (and .pub, -cert.pub)
 *
 * A login whose grants require a passkey step-up gets, under a completed step-up, a single-use
 * certificate valid 60 s in the same files (./step-up.ts).
 *
 * A certificate is reused while it has more than the renewal margin left, was signed by the CA's
 * current key, its key is still at hand, and its key id names the request it is wanted for (none
 * for a standing login): one issued under another request, or under one that has since ended or
 * been withdrawn, is never reused. Otherwise a new key is made and signed.
 *
 * @module
 */
import { readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { readSshCertificate, type SshCertificateInfo } from "@wap/ssh-wire";
import type { ConfigStore } from "../config.js";
import { CliError } from "../exit-codes.js";
import { agentPublicKeys, withoutComment } from "./agent.js";
import { isId, isLoginName } from "./targets.js";

/** A certificate ready for `ssh`. */
export interface UserCertificate {
  readonly caId: string;
  /**
   * What ssh's IdentityFile points at: always the private key's path. When the agent holds the
   * key there is no file there, and ssh reads `<path>.pub` to pick the agent's key; so a
   * generated ssh_config stays right whether or not an agent runs at the next renewal.
   */
  readonly identityFile: string;
  readonly certificateFile: string;
  readonly inAgent: boolean;
  readonly info: SshCertificateInfo;
}

/** A certificate signed for one login of a target, under that login's grant and its limits. */
export interface LoginBinding {
  readonly targetId: string;
  readonly login: string;
}

/** What a certificate is kept apart for: one login of a target (its limits), or an access request. */
export interface CertificateScope {
  readonly binding?: LoginBinding;
  readonly requestId?: string;
}

/**
 * The key and certificate files of an authority, named by its id (only ever a UUID, never a
 * path); those of a certificate for one login add the target id and the login, those of an
 * access request the request's id.
 */
export function certificatePaths(store: ConfigStore, caId: string, scope: CertificateScope = {}) {
  const { binding, requestId } = scope;
  if (!isId(caId))
    throw new CliError(`the server named an authority ${JSON.stringify(caId)}, which is not an id`);
  if (binding !== undefined && (!isId(binding.targetId) || !isLoginName(binding.login))) {
    throw new CliError(`the target id or login ${JSON.stringify(binding)} cannot name a file`);
  }
  if (requestId !== undefined && !isId(requestId))
    throw new CliError(`the server named an access request ${JSON.stringify(requestId)}, which is not an id`);
  const name =
    binding !== undefined
      ? `${caId}.${binding.targetId}.${binding.login}`
      : requestId !== undefined
        ? `${caId}-request-${requestId}`
        : caId;
  const privateKey = join(store.sshDir, name);
  return { privateKey, publicKey: `${privateKey}.pub`, certificate: `${privateKey}-cert.pub` };
}

/**
 * Removes the keys and certificates kept for `caId`'s access requests other than `approved` (the
 * caller's requests approved now): a withdrawn or ended request's files are of no more use.
 */
export async function removeEndedRequestCertificates(
  store: ConfigStore,
  caId: string,
  approved: ReadonlySet<string>,
): Promise<void> {
  const prefix = `${caId}-request-`;
  const names = await readdir(store.sshDir).catch(() => [] as string[]);
  const ended = new Set(
    names
      .filter((name) => name.startsWith(prefix))
      .map((name) => name.slice(prefix.length, prefix.length + 36))
      .filter((id) => isId(id) && !approved.has(id)),
  );
  for (const id of ended) {
    const paths = certificatePaths(store, caId, { requestId: id });
    for (const file of [paths.privateKey, paths.publicKey, paths.certificate])
      await rm(file, { force: true });
  }
}

/** The access request a certificate's key id names (`…:request:<id>`, as the server issues them). */
export function requestOfKeyId(keyId: string): string | undefined {
  return /:request:([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i.exec(keyId)?.[1];
}

/** Reads a certificate file; undefined when it is missing or not a certificate. */
export async function readCertificateFile(
  store: ConfigStore,
  path: string,
): Promise<SshCertificateInfo | undefined> {
  const text = await store.readFile(path);
  if (text === undefined) return undefined;
  try {
    return readSshCertificate(text);
  } catch {
    return undefined;
  }
}

/**
 * The stored certificate for `caId` (and `requestId`) if it can still be used for longer than
 * `renewBeforeMs` and its key id names `requestId` (no request when absent).
 */
export async function currentCertificate(
  store: ConfigStore,
  env: NodeJS.ProcessEnv,
  caId: string,
  renewBeforeMs: number,
  caPublicKey?: string,
  requestId?: string,
): Promise<UserCertificate | undefined> {
  const paths = certificatePaths(store, caId, requestId === undefined ? {} : { requestId });
  const info = await readCertificateFile(store, paths.certificate);
  if (info === undefined || info.validBefore.getTime() - Date.now() <= renewBeforeMs) return undefined;
  if (requestOfKeyId(info.keyId) !== requestId) return undefined;
  if (caPublicKey !== undefined && withoutComment(caPublicKey.split("\n")[0]!) !== info.caPublicKey)
    return undefined;
  if ((await store.readFile(paths.privateKey)) !== undefined) {
    return { caId, identityFile: paths.privateKey, certificateFile: paths.certificate, inAgent: false, info };
  }
  const publicKey = await store.readFile(paths.publicKey);
  if (publicKey === undefined || !(await agentPublicKeys(env)).includes(withoutComment(publicKey)))
    return undefined;
  return { caId, identityFile: paths.privateKey, certificateFile: paths.certificate, inAgent: true, info };
}
