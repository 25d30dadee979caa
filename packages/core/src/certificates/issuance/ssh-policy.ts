/**
 * Who may have which SSH certificate, and what it then says.
 *
 * - **User certificates** name their holder: the principal is the caller's subject id (user id or
 *   service-account id), never a name the caller chose. Any member may ask (the
 *   CLI runs for viewers too): what the certificate opens is decided by the principal grants of
 *   each target. Daemons get none.
 * - **Host certificates** name a target: the target id first (what a client with `HostKeyAlias
 *   <target id>` checks), then the names a plain `ssh <host>` checks against them: the target's
 *   name and the host of each of its endpoints (hostPrincipalsOf): what an administrator set or
 *   approved (targets/host-names.ts), never a name or address another target also claims, and
 *   never what a daemon reports that waits for approval.
 *   A daemon gets one for its own target only, once accepted; a person or service account needs
 *   `certificates.sign` (editor and up) and may ask for any target of the workspace.
 *
 * The authoriser returns sign options; it never signs.
 *
 * @module
 */
import { isIP } from "node:net";
import { type ConditionalPermission, holds } from "../../access/conditional.js";
import type { CallContext } from "../../context.js";
import type { SshCertificateType } from "../../crypto/ssh/certificate.js";
import type { ParsedSshPublicKey } from "../../crypto/ssh/parse-public-key.js";
import {
  FailedPreconditionError,
  InvalidArgumentError,
  PermissionDeniedError,
  PlatformError,
  UnauthenticatedError,
} from "../../errors.js";
import type { WorkspaceScope } from "../../operations/operation.js";
import type { CertificateAuthorityRecord } from "../../storage/certificate-authorities.js";
import type { Repositories } from "../../storage/storage.js";
import type { TargetRecord } from "../../storage/targets.js";
import { claimedByOtherTargets } from "../host-names.js";
import { allowedKeyTypes, backdate, lifetime, type ValidityDraft } from "./options.js";
import type { SignOption } from "./pipeline.js";
import { findTarget } from "./resolve.js";

/** The certificate being built. */
export interface SshDraft extends ValidityDraft {
  type: SshCertificateType;
  principals: string[];
  criticalOptions: Record<string, string>;
  extensions: Record<string, string>;
}

export type SshSignOption = SignOption<ParsedSshPublicKey, SshDraft>;

/** What a request is for, once the caller's right to ask for that kind of certificate is checked. */
export interface SshSubject {
  readonly type: SshCertificateType;
  /** The host certificate's target; for user certificates, the target named in the request, if any. */
  readonly target: TargetRecord | undefined;
  /** Host certificates: the names and addresses other targets of the workspace claim (lower case). */
  readonly claimedElsewhere?: ReadonlySet<string>;
  /** The user or service-account id a user certificate names. */
  readonly subjectId: string;
}

/** Critical options our certificates may carry: the daemon's sshd refuses any other. */
const userCriticalOptions = ["force-command", "source-address"] as const;

/** What a host certificate needs beyond the right to ask for one's own user certificate. */
export const hostCertificates: ConditionalPermission = {
  permission: "certificates.sign",
  when: "for host certificates",
};

/**
 * Checks that the caller may ask for a certificate of `type` and finds its target: the daemon's
 * own, or the one the request names.
 */
export async function resolveSshSubject(
  storage: Repositories,
  params: {
    readonly ctx: CallContext;
    readonly workspace: WorkspaceScope;
    readonly type: SshCertificateType;
    readonly targetId: string | undefined;
  },
): Promise<SshSubject> {
  const { ctx, workspace, type, targetId } = params;
  const caller = ctx.caller;
  const workspaceId = workspace.workspaceId;
  if (caller.kind === "daemon") {
    if (type !== "host") {
      throw new PermissionDeniedError("a daemon may ask only for host certificates", {
        reason: "DAEMON_USER_CERTIFICATE",
      });
    }
    const daemon = await storage.daemons.findById(workspaceId, caller.daemonId);
    if (daemon === null) throw new UnauthenticatedError("this daemon is no longer enrolled");
    if (daemon.status === "rejected") {
      throw new PermissionDeniedError("this daemon was rejected", { reason: "DAEMON_REJECTED" });
    }
    if (daemon.status !== "accepted") {
      throw new FailedPreconditionError(
        "this daemon has not been accepted yet: host certificates are signed once an administrator accepts it",
        { reason: "DAEMON_NOT_ACCEPTED" },
      );
    }
    if (daemon.targetId === null) {
      throw new FailedPreconditionError("this daemon serves no target", { reason: "DAEMON_HAS_NO_TARGET" });
    }
    if (targetId !== undefined && targetId !== daemon.targetId) {
      throw new PermissionDeniedError("a daemon may ask for host certificates of its own target only", {
        reason: "NOT_THE_DAEMON_TARGET",
      });
    }
    const target = await storage.targets.findById(workspaceId, daemon.targetId);
    if (target === null) {
      throw new FailedPreconditionError(`this daemon's target ${daemon.targetId} no longer exists`, {
        reason: "DAEMON_HAS_NO_TARGET",
      });
    }
    return {
      type,
      target,
      subjectId: daemon.id,
      claimedElsewhere: await claimedByOtherTargets(storage, workspaceId, target.id),
    };
  }
  if (caller.kind !== "user" && caller.kind !== "service_account") {
    throw new UnauthenticatedError("this call needs credentials");
  }
  const subjectId = caller.kind === "user" ? caller.userId : caller.serviceAccountId;
  if (type === "host") {
    if (!holds(workspace.role, hostCertificates)) {
      throw new PermissionDeniedError(
        `host certificates need the ${hostCertificates.permission} permission (editor and up); the ${workspace.role} role lacks it`,
        { reason: "ROLE_LACKS_PERMISSION" },
      );
    }
    if (targetId === undefined) {
      throw new InvalidArgumentError("invalid request: targetId: is required for host certificates", {
        violations: [{ field: "targetId", description: "is required for host certificates" }],
      });
    }
    const target = await findTarget(storage, workspaceId, targetId);
    return {
      type,
      target,
      subjectId,
      claimedElsewhere: await claimedByOtherTargets(storage, workspaceId, target.id),
    };
  }
  const target = targetId === undefined ? undefined : await findTarget(storage, workspaceId, targetId);
  return { type, target, subjectId };
}

/** A DNS host name (RFC 1123 labels), as `ssh` compares it with a host certificate's principals. */
const hostNamePattern =
  /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/i;

/** The host of an endpoint (`host:port`, `[ipv6]:port`, `host`), without port or brackets. */
export function endpointHost(endpoint: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(endpoint);
  if (bracketed) return bracketed[1]!;
  if (isIP(endpoint) === 6) return endpoint;
  const colon = endpoint.lastIndexOf(":");
  return colon > 0 && /^\d+$/.test(endpoint.slice(colon + 1)) ? endpoint.slice(0, colon) : endpoint;
}

/**
 * The principals of a target's host certificate: its id, its name and every (approved) endpoint's
 * host, each once, in that order. Names that are neither an IP address nor a DNS name (an
 * endpoint typed by hand, say) are left out: `ssh` could never match them. So is every name
 * `claimedElsewhere` (another target's name or address): no host certificate vouches for another
 * target. The host name a daemon reports (metadata) is never named: it is the daemon's word.
 */
export function hostPrincipalsOf(
  target: TargetRecord,
  claimedElsewhere: ReadonlySet<string> = new Set(),
): string[] {
  const names = [target.name, ...target.endpoints.map(endpointHost)];
  const usable = names.filter(
    (name) => (isIP(name) !== 0 || hostNamePattern.test(name)) && !claimedElsewhere.has(name.toLowerCase()),
  );
  return [...new Set([target.id, ...usable])];
}

/** A host key is never a security key: a host cannot touch a token at every connection. */
const noSecurityKeyHosts: SshSignOption = {
  kind: "key",
  name: "no-security-key-hosts",
  check(key) {
    if (!key.algorithm.startsWith("sk-")) return;
    const description = "a host key cannot be a security-key (sk-) key";
    throw new InvalidArgumentError(`invalid request: publicKey: ${description}`, {
      reason: "INVALID_PUBLIC_KEY",
      violations: [{ field: "publicKey", description }],
    });
  },
};

/** The options a certificate for `subject` from `ca` is issued under. */
export function authorizeSshSign(params: {
  readonly subject: SshSubject;
  readonly ca: CertificateAuthorityRecord;
  readonly now: Date;
  readonly requestedTtlSeconds: number | undefined;
}): SshSignOption[] {
  const { subject, ca, now } = params;
  const user = subject.type === "user";
  const template: SshSignOption = user
    ? {
        kind: "template",
        name: "user-certificate",
        apply(draft) {
          draft.type = "user";
          draft.principals = [subject.subjectId];
          draft.extensions = { ...ca.userExtensions };
          draft.criticalOptions = {};
          for (const name of userCriticalOptions) {
            const value = ca.userCriticalOptions[name];
            if (value !== undefined) draft.criticalOptions[name] = value;
          }
        },
      }
    : {
        kind: "template",
        name: "host-certificate",
        apply(draft) {
          draft.type = "host";
          draft.principals = hostPrincipalsOf(subject.target!, subject.claimedElsewhere);
          draft.extensions = {};
          draft.criticalOptions = {};
        },
      };
  return [
    allowedKeyTypes<ParsedSshPublicKey>(ca.allowedKeyTypes, "publicKey", (key) => key.keyType),
    ...(user ? [] : [noSecurityKeyHosts]),
    template,
    backdate(now),
    lifetime({
      now,
      requestedSeconds: params.requestedTtlSeconds,
      defaultSeconds: user ? ca.userDefaultTtlSeconds : ca.hostDefaultTtlSeconds,
      maxSeconds: user ? ca.userMaxTtlSeconds : ca.hostMaxTtlSeconds,
      kindName: user ? "user certificates" : "host certificates",
      authorityNotAfter: ca.notAfter,
    }),
    {
      kind: "validator",
      name: "complete",
      validate(draft) {
        // Invariants of the options above: OpenSSH reads no principals as "anyone".
        if (draft.principals.length === 0 || draft.validBefore.getTime() <= draft.validAfter.getTime()) {
          throw new PlatformError("internal", "the certificate draft is incomplete");
        }
      },
    },
  ];
}
