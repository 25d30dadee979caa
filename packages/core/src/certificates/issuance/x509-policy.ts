/**
 * Which names an X.509 certificate may carry for whom. The CSR asks; this policy decides.
 *
 * - **Client certificates** (`X509_USAGE_CLIENT_AUTH`, any member or service account): the
 *   certificate names its holder by an identity no other subject can claim. The CN is always
 *   the caller's id (a user's or service account's; the CSR may leave it empty or ask for the id
 *   in any case): usernames and service-account names change hands and a name in one workspace
 *   may be a username elsewhere, ids never. The only SAN allowed is the user's verified email.
 *   DNS, IP and URI names are refused.
 * - **Server certificates** (`X509_USAGE_SERVER_AUTH`, `X509_USAGE_CLIENT_AND_SERVER`: the
 *   `certificates.sign` permission, editor and up): the certificate names machines of the
 *   workspace. The CN and every DNS SAN must be a target's name or an endpoint host name, every
 *   IP SAN a target's endpoint address; email and URI SANs are refused. The CN defaults to the
 *   first DNS or IP name.
 *
 * A name outside the rule is `permission_denied` naming it: the caller may not claim it.
 *
 * @module
 */
import { BlockList, isIP } from "node:net";
import { type ConditionalPermission, holds } from "../../access/conditional.js";
import type { CallContext } from "../../context.js";
import type { ParsedCsr, SubjectAltNames, X509Usage } from "../../crypto/x509/leaf-certificate.js";
import { PermissionDeniedError, PlatformError, UnauthenticatedError } from "../../errors.js";
import type { WorkspaceScope } from "../../operations/operation.js";
import type { CertificateAuthorityRecord } from "../../storage/certificate-authorities.js";
import type { Repositories } from "../../storage/storage.js";
import { allTargets } from "../host-names.js";
import { allowedKeyTypes, backdate, lifetime, type ValidityDraft } from "./options.js";
import type { SignOption } from "./pipeline.js";

/** The certificate being built; it starts with the names the CSR asks for. */
export interface X509Draft extends ValidityDraft {
  usage: X509Usage;
  commonName: string;
  sans: { dns: string[]; ip: string[]; email: string[]; uri: string[] };
}

export type X509SignOption = SignOption<ParsedCsr, X509Draft>;

/** The names a caller may put into a certificate of the usage it asks for. */
export type X509NamePolicy =
  | {
      readonly kind: "client";
      readonly subjectId: string;
      /** The verified email, lower-cased, if there is one. */
      readonly email: string | undefined;
    }
  | {
      readonly kind: "server";
      /** Lower-cased target names and endpoint host names. */
      readonly hostNames: ReadonlySet<string>;
      readonly addresses: BlockList;
    };

const notAllowed = (what: string, why: string) =>
  new PermissionDeniedError(`the certificate may not name ${what}: ${why}`, { reason: "NAME_NOT_ALLOWED" });

/** The host part of an endpoint: `10.0.0.5:4022`, `[2001:db8::1]:4022`, `web.example.com`. */
export function endpointHost(endpoint: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(endpoint);
  if (bracketed) return bracketed[1]!;
  const colons = endpoint.split(":").length - 1;
  if (colons === 1) return endpoint.slice(0, endpoint.indexOf(":"));
  return endpoint;
}

/** What a server (or server and client) certificate needs beyond the right to ask for a client one. */
export const serverCertificates: ConditionalPermission = {
  permission: "certificates.sign",
  when: "for server certificates",
};

/**
 * The name policy for the caller and usage; checks the permission server certificates need.
 */
export async function resolveX509NamePolicy(
  storage: Repositories,
  params: { readonly ctx: CallContext; readonly workspace: WorkspaceScope; readonly usage: X509Usage },
): Promise<X509NamePolicy> {
  const { ctx, workspace, usage } = params;
  const caller = ctx.caller;
  if (usage !== "client") {
    if (!holds(workspace.role, serverCertificates)) {
      throw new PermissionDeniedError(
        `server certificates need the ${serverCertificates.permission} permission (editor and up); the ${workspace.role ?? "daemon"} caller lacks it`,
        { reason: "ROLE_LACKS_PERMISSION" },
      );
    }
    const hostNames = new Set<string>();
    const addresses = new BlockList();
    for (const target of await allTargets(storage, workspace.workspaceId)) {
      hostNames.add(target.name.toLowerCase());
      for (const endpoint of target.endpoints) {
        const host = endpointHost(endpoint);
        const family = isIP(host);
        if (family === 4) addresses.addAddress(host, "ipv4");
        else if (family === 6) addresses.addAddress(host, "ipv6");
        else if (host !== "") hostNames.add(host.toLowerCase());
      }
    }
    return { kind: "server", hostNames, addresses };
  }
  if (caller.kind === "user") {
    const user = await storage.users.findById(caller.userId);
    if (user === null) throw new UnauthenticatedError("this account no longer exists");
    return {
      kind: "client",
      subjectId: user.id,
      email: user.emailVerified ? user.email.toLowerCase() : undefined,
    };
  }
  if (caller.kind === "service_account") {
    const account = await storage.serviceAccounts.findById(workspace.workspaceId, caller.serviceAccountId);
    if (account === null) throw new UnauthenticatedError("this service account no longer exists");
    return { kind: "client", subjectId: account.id, email: undefined };
  }
  throw new PermissionDeniedError("daemons may not ask for X.509 certificates", {
    reason: "DAEMON_X509_CERTIFICATE",
  });
}

function checkClientNames(policy: Extract<X509NamePolicy, { kind: "client" }>, draft: X509Draft): void {
  const cn = draft.commonName;
  if (cn !== "" && cn.toLowerCase() !== policy.subjectId.toLowerCase()) {
    throw notAllowed(
      `CN=${cn}`,
      `a client certificate's CN is your id (${policy.subjectId}); leave it empty to get it`,
    );
  }
  // Written as the id is stored (lower case), whatever the CSR's spelling.
  draft.commonName = policy.subjectId;
  for (const email of draft.sans.email) {
    if (email.toLowerCase() !== policy.email) {
      throw notAllowed(`email:${email}`, "the only email a client certificate names is your verified email");
    }
  }
  const other = [
    ...draft.sans.dns.map((n) => `DNS:${n}`),
    ...draft.sans.ip.map((n) => `IP:${n}`),
    ...draft.sans.uri.map((n) => `URI:${n}`),
  ];
  if (other.length > 0) {
    throw notAllowed(
      other[0]!,
      "client certificates carry no DNS, IP or URI names; ask for a server certificate",
    );
  }
}

function isKnownAddress(addresses: BlockList, ip: string): boolean {
  return addresses.check(ip, isIP(ip) === 6 ? "ipv6" : "ipv4");
}

function checkServerNames(policy: Extract<X509NamePolicy, { kind: "server" }>, draft: X509Draft): void {
  const why = "server certificates name the workspace's targets: their names and endpoint hosts";
  const cn = draft.commonName;
  if (
    cn !== "" &&
    !policy.hostNames.has(cn.toLowerCase()) &&
    !(isIP(cn) && isKnownAddress(policy.addresses, cn))
  ) {
    throw notAllowed(`CN=${cn}`, why);
  }
  for (const dns of draft.sans.dns)
    if (!policy.hostNames.has(dns.toLowerCase())) throw notAllowed(`DNS:${dns}`, why);
  for (const ip of draft.sans.ip)
    if (!isKnownAddress(policy.addresses, ip)) throw notAllowed(`IP:${ip}`, why);
  const other = [...draft.sans.email.map((n) => `email:${n}`), ...draft.sans.uri.map((n) => `URI:${n}`)];
  if (other.length > 0) throw notAllowed(other[0]!, "server certificates carry DNS and IP names only");
  if (cn === "") {
    const first = draft.sans.dns[0] ?? draft.sans.ip[0];
    if (first === undefined) {
      throw notAllowed("nothing", "a server certificate needs a CN or a DNS or IP name");
    }
    draft.commonName = first;
  }
}

/** The options a certificate from `csr` and `ca` is issued under. */
export function authorizeX509Sign(params: {
  readonly policy: X509NamePolicy;
  readonly usage: X509Usage;
  readonly ca: CertificateAuthorityRecord;
  readonly now: Date;
  readonly requestedTtlSeconds: number | undefined;
}): X509SignOption[] {
  const { policy, usage, ca, now } = params;
  const client = usage === "client";
  return [
    allowedKeyTypes<ParsedCsr>(ca.allowedKeyTypes, "csr", (csr) => csr.publicKey.keyType),
    {
      kind: "template",
      name: "usage",
      apply(draft) {
        draft.usage = usage;
      },
    },
    backdate(now),
    lifetime({
      now,
      requestedSeconds: params.requestedTtlSeconds,
      defaultSeconds: client ? ca.userDefaultTtlSeconds : ca.hostDefaultTtlSeconds,
      maxSeconds: client ? ca.userMaxTtlSeconds : ca.hostMaxTtlSeconds,
      kindName: client ? "client certificates" : "server certificates",
      authorityNotAfter: ca.notAfter,
    }),
    {
      kind: "name-policy",
      name: policy.kind === "client" ? "client-names" : "server-names",
      check(draft) {
        if (policy.kind === "client") checkClientNames(policy, draft);
        else checkServerNames(policy, draft);
      },
    },
    {
      kind: "validator",
      name: "complete",
      validate(draft) {
        if (draft.commonName === "" || draft.validBefore.getTime() <= draft.validAfter.getTime()) {
          throw new PlatformError("internal", "the certificate draft is incomplete");
        }
      },
    },
  ];
}

/** The names of an X.509 draft as the ledger lists them: the CN, then typed SANs. */
export function ledgerNames(draft: X509Draft): string[] {
  const sans: SubjectAltNames = draft.sans;
  return [
    draft.commonName,
    ...sans.dns.map((n) => `DNS:${n}`),
    ...sans.ip.map((n) => `IP:${n}`),
    ...sans.email.map((n) => `email:${n}`),
    ...sans.uri.map((n) => `URI:${n}`),
  ];
}
