/**
 * Daemon request authentication: the `Platform <daemon_id>:<ts>:<nonce>:<procedure>:<sig>`
 * challenge (docs/agent-protocol.md), in the CLI devices' format and verified by their code, against
 * the key registered at enrolment. Nonces are remembered per daemon (`daemon:<id>`), in the
 * same store as the devices'.
 *
 * A rejected daemon still authenticates: it must be able to open its control
 * stream to hear that it was rejected, and SyncDaemon answers it REJECTED. Operations decide
 * what it may do (no principals, no host certificates, no sessions). A deleted daemon does not.
 *
 * Devices and daemons sign the same way and both have UUIDs. {@link authenticateSignedRequest}
 * tells them apart by the header family when the transport knows it (`Platform-Daemon-*` vs
 * `Platform-Client-Device-Id`), else by looking the id up among daemons first: daemon ids are
 * minted by the server, device ids by clients, so an id is never both in practice, and a
 * device claiming a daemon's id still needs that daemon's key.
 *
 * @module
 */
import { accountConfig } from "../auth/account-config.js";
import type { Caller, DaemonCaller } from "../context.js";
import { authenticateDevice, challengeSignatureValid, parsePlatformChallenge } from "../devices/challenge.js";
import { UnauthenticatedError } from "../errors.js";
import type { Services } from "../operations/services.js";
import type { DaemonRecord } from "../storage/daemons.js";

/** What the transport hands over: the value after `Platform ` and the path that arrived. */
export interface SignedRequestInput {
  readonly value: string;
  /** The request's procedure path, e.g. `/platform.v1.DaemonService/SyncDaemon`. */
  readonly procedure: string;
}

const invalid = () =>
  new UnauthenticatedError(
    "the daemon signature is invalid, stale or replayed, or the daemon is not enrolled",
    {
      reason: "INVALID_DAEMON_SIGNATURE",
    },
  );

/** Resolves a daemon's signed challenge to the daemon; every failure is the same `unauthenticated`. */
export async function authenticateDaemon(
  services: Services,
  input: SignedRequestInput,
): Promise<DaemonCaller> {
  return verifyDaemon(services, input, undefined);
}

async function verifyDaemon(
  services: Services,
  input: SignedRequestInput,
  known: DaemonRecord | undefined,
): Promise<DaemonCaller> {
  const now = services.clock.now();
  const challenge = parsePlatformChallenge(input.value);
  if (challenge === null || challenge.procedure !== input.procedure) throw invalid();
  const windowMs = accountConfig(services).challengeWindowSeconds * 1000;
  const signedAtMs = challenge.timestamp * 1000;
  if (Math.abs(now.getTime() - signedAtMs) > windowMs) throw invalid();
  const daemon = known ?? (await services.storage.daemons.findForAuthentication(challenge.id));
  if (!daemon || daemon.id !== challenge.id) throw invalid();
  if (!challengeSignatureValid(challenge, daemon.authPublicKey)) throw invalid();
  // Claimed last, so nobody can burn a daemon's nonces without its key.
  const expiresAt = new Date(signedAtMs + windowMs + 1000);
  if (!(await services.storage.requestNonces.claim(`daemon:${daemon.id}`, challenge.nonce, expiresAt, now))) {
    throw invalid();
  }
  return { kind: "daemon", daemonId: daemon.id, workspaceId: daemon.workspaceId };
}

/**
 * Resolves a `Platform` challenge of a daemon or a CLI device. `family` is what the request's
 * headers say (`daemon` for `Platform-Daemon-*`, `device` for `Platform-Client-Device-Id`);
 * without it, the id is looked up among daemons first.
 */
export async function authenticateSignedRequest(
  services: Services,
  input: SignedRequestInput & { readonly family?: "daemon" | "device" },
): Promise<Caller> {
  if (input.family === "daemon") return verifyDaemon(services, input, undefined);
  if (input.family === undefined) {
    const challenge = parsePlatformChallenge(input.value);
    const daemon = challenge && (await services.storage.daemons.findForAuthentication(challenge.id));
    if (daemon) return verifyDaemon(services, input, daemon);
  }
  return authenticateDevice(services, { challenge: input.value, procedure: input.procedure });
}
