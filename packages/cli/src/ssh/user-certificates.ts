/**
 * Signing user certificates for SSH: a fresh Ed25519 key for each certificate, kept only in the
 * ssh-agent (with the certificate's lifetime) when one runs, otherwise as a 0600 file next to it
 * (certificate-files.ts names the files and says which stored certificate may be reused).
 *
 * @module
 */
import { generateKeyPairSync } from "node:crypto";
import { rm } from "node:fs/promises";
import { SignSSHCertificateRequest_CertificateType } from "@wap/api/gen/platform/v1/certificates_pb";
import { opensshPrivateKey, readSshCertificate, sshPublicKeyLine } from "@wap/ssh-wire";
import type { ConfigStore } from "../config.js";
import { CliError } from "../exit-codes.js";
import type { SessionWith } from "../session.js";
import { addToAgent, agentAvailable } from "./agent.js";
import {
  certificatePaths,
  currentCertificate,
  type LoginBinding,
  type UserCertificate,
} from "./certificate-files.js";

/** What signing a certificate needs of a session: the certificates client. */
export type SigningSession = Pick<SessionWith<"certificates">, "clients">;

export interface IssueOptions {
  readonly workspaceId: string;
  readonly caId: string;
  /** Asked for; the server keeps it within the CA's limits. Its default when absent. */
  readonly ttlMs?: number;
  /** Sign for this login of this target, under its grant (the certificate carries its limits). */
  readonly binding?: LoginBinding;
  /**
   * For a login held on request: the approved request and its target. The certificate is asked
   * for the target (the server binds it to the caller's approved request there) and kept apart.
   */
  readonly request?: { readonly id: string; readonly targetId: string };
  /** For a login whose grant requires a step-up: the completed step-up it is signed under. */
  readonly stepUpId?: string;
}

/** Signs a fresh Ed25519 key with the CA and stores it (agent or file) with its certificate. */
export async function issueCertificate(
  session: SigningSession,
  store: ConfigStore,
  env: NodeJS.ProcessEnv,
  options: IssueOptions,
): Promise<UserCertificate> {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  const comment = "wap";
  const publicLine = sshPublicKeyLine(publicKey, comment);
  const signed = await session.clients.certificates.signSSHCertificate({
    workspaceId: options.workspaceId,
    caId: options.caId,
    type: SignSSHCertificateRequest_CertificateType.USER,
    publicKey: publicLine,
    ...(options.ttlMs === undefined ? {} : { ttl: { seconds: BigInt(Math.round(options.ttlMs / 1000)) } }),
    ...(options.request === undefined ? {} : { targetId: options.request.targetId }),
    ...(options.binding && { targetId: options.binding.targetId, login: options.binding.login }),
    ...(options.stepUpId && { stepUpId: options.stepUpId }),
  });
  if (signed.caId !== options.caId) {
    throw new CliError(
      `the server signed with another authority (${signed.caId}) than asked (${options.caId})`,
    );
  }
  const info = readSshCertificate(signed.signedCertificate);
  const paths = certificatePaths(store, options.caId, {
    ...(options.binding && { binding: options.binding }),
    ...(options.request && { requestId: options.request.id }),
  });
  const privateText = opensshPrivateKey(privateKey.export({ format: "der", type: "pkcs8" }), comment);
  const inAgent = await agentAvailable(env);
  if (inAgent) {
    await addToAgent(env, privateText, Math.floor((info.validBefore.getTime() - Date.now()) / 1000));
    await rm(paths.privateKey, { force: true });
  } else {
    await store.writeFile(paths.privateKey, privateText);
  }
  await store.writeFile(paths.publicKey, `${publicLine}\n`);
  await store.writeFile(paths.certificate, `${signed.signedCertificate.trim()}\n`);
  return {
    caId: options.caId,
    identityFile: paths.privateKey,
    certificateFile: paths.certificate,
    inAgent,
    info,
  };
}

/** The stored certificate when still good for longer than `renewBeforeMs`, else a new one. */
export async function ensureCertificate(
  session: SigningSession,
  store: ConfigStore,
  env: NodeJS.ProcessEnv,
  options: IssueOptions & { readonly renewBeforeMs: number; readonly caPublicKey?: string },
): Promise<UserCertificate & { readonly renewed: boolean }> {
  const current = await currentCertificate(
    store,
    env,
    options.caId,
    options.renewBeforeMs,
    options.caPublicKey,
    options.request?.id,
  );
  if (current !== undefined) return { ...current, renewed: false };
  return { ...(await issueCertificate(session, store, env, options)), renewed: true };
}
