/**
 * What an authority asks relying parties to trust, published for anyone to fetch without
 * credentials (nothing in it is secret: public keys and CA certificates), in the exact form each
 * consumer reads, all made from the one list of trusted keys (issuance/trust.ts):
 *
 * | document       | authority | what                                                             |
 * | -------------- | --------- | ---------------------------------------------------------------- |
 * | `user_ca_keys` | SSH       | the lines of sshd's `TrustedUserCAKeys` file                     |
 * | `known_hosts`  | SSH       | one `@cert-authority <hosts> <key>` line per key, for known_hosts |
 * | `bundle.pem`   | X.509     | the CA certificates to trust (PEM)                               |
 *
 * @module
 */
import { InvalidArgumentError } from "../errors.js";
import type { Services } from "../operations/services.js";
import { uuid } from "../validation/rules.js";
import { retiredKeysOf, trustedKeysOf } from "./issuance/trust.js";

export const trustDocuments = ["user_ca_keys", "known_hosts", "bundle.pem"] as const;
export type TrustDocument = (typeof trustDocuments)[number];

/** A known_hosts host pattern list: names, addresses, `*` and `?` wildcards, `!` negation. */
const hostPatterns = /^!?[A-Za-z0-9.*?_:[\]-]+(?:,!?[A-Za-z0-9.*?_:[\]-]+)*$/;
const maxHostPatterns = 1024;

export interface PublishedTrust {
  readonly contentType: string;
  readonly body: string;
}

/**
 * The document `document` of authority `caId`, or null when there is no authority of that id
 * and kind (the endpoint answers 404 alike). `hosts` is the known_hosts pattern list of the
 * `@cert-authority` lines (`*` when not given): the narrower, the fewer hosts a key of this
 * authority can vouch for.
 */
export async function publishedTrust(
  services: Services,
  caId: string,
  document: TrustDocument,
  options: { readonly hosts?: string | undefined } = {},
): Promise<PublishedTrust | null> {
  const hosts = options.hosts ?? "*";
  if (document === "known_hosts" && (hosts.length > maxHostPatterns || !hostPatterns.test(hosts))) {
    const description = `a comma-separated list of known_hosts patterns (host names, addresses, * and ? wildcards, ! to exclude; at most ${maxHostPatterns} characters), e.g. *.corp.example.com,10.0.0.*`;
    throw new InvalidArgumentError(`invalid request: hosts: ${description}`, {
      violations: [{ field: "hosts", description }],
    });
  }
  if (!uuid.safeParse(caId).success) return null;
  const ca = await services.storage.certificateAuthorities.findForPublication(caId);
  const ssh = document !== "bundle.pem";
  if (ca === null || (ca.authorityType === "ssh") !== ssh) return null;
  const keys = trustedKeysOf(ca, await retiredKeysOf(services, services.storage, ca), services.clock.now());
  if (!ssh) {
    return {
      contentType: "application/pem-certificate-chain",
      body: keys
        .map(({ certificate }) => (certificate.endsWith("\n") ? certificate : `${certificate}\n`))
        .join(""),
    };
  }
  // The lines as SignSSHCertificate's `caPublicKey` gives them to daemons, one key each.
  const lines = keys.map(({ publicKey }) => publicKey.trim());
  return {
    contentType: "text/plain; charset=utf-8",
    body: lines
      .map((key) => (document === "known_hosts" ? `@cert-authority ${hosts} ${key}\n` : `${key}\n`))
      .join(""),
  };
}
