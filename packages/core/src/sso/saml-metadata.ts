/**
 * A SAML identity provider's metadata: fetched from the configured URL, read for its entity id,
 * its HTTP-Redirect sign-in address and its signing certificates, and kept with the provider
 * until it is older than `metadataTtlSeconds`.
 *
 * @module
 */
import { FailedPreconditionError, UnavailableError } from "../errors.js";
import type { Services } from "../operations/services.js";
import type { SamlIdpMetadata, SamlProviderRecord } from "../storage/sso.js";
import { isAllowedIdpUrl, ssoOptions } from "./options.js";

const redirectBinding = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect";

/** An xml2js node as node-saml's parser produces it: prefixes stripped, text under `_`, attributes under `$`. */
interface XmlNode {
  readonly $?: Readonly<Record<string, string>>;
  readonly _?: string;
  readonly [child: string]: unknown;
}

function children(node: XmlNode | undefined, name: string): XmlNode[] {
  const value = node?.[name];
  return Array.isArray(value) ? (value as XmlNode[]) : [];
}

function toPemCertificate(base64: string): string {
  const body = base64.replace(/\s+/g, "");
  const lines = body.match(/.{1,64}/g) ?? [];
  return `-----BEGIN CERTIFICATE-----\n${lines.join("\n")}\n-----END CERTIFICATE-----\n`;
}

/** Reads IdP metadata (an EntityDescriptor, or the first IdP of an EntitiesDescriptor). */
export async function parseIdpMetadata(xml: string, fetchedAt: Date): Promise<SamlIdpMetadata> {
  // node-saml's XML reader, loaded with the first metadata read (a platform without SAML never needs it).
  const { parseXml2JsFromString } = await import("@node-saml/node-saml/lib/xml.js");
  const doc = (await parseXml2JsFromString(xml)) as Record<string, XmlNode | undefined>;
  const entities = doc.EntityDescriptor
    ? [doc.EntityDescriptor]
    : children(doc.EntitiesDescriptor, "EntityDescriptor");
  const entity = entities.find((e) => children(e, "IDPSSODescriptor").length > 0);
  const idp = children(entity, "IDPSSODescriptor")[0];
  const entityId = entity?.$?.entityID;
  if (!entity || !idp || !entityId) throw new Error("no EntityDescriptor with an IDPSSODescriptor");
  const ssoUrl = children(idp, "SingleSignOnService").find((s) => s.$?.Binding === redirectBinding)?.$
    ?.Location;
  if (!ssoUrl) throw new Error("no HTTP-Redirect SingleSignOnService");
  const certificates = children(idp, "KeyDescriptor")
    .filter((k) => k.$?.use === undefined || k.$.use === "signing")
    .flatMap((k) => children(k, "KeyInfo"))
    .flatMap((info) => children(info, "X509Data"))
    .flatMap((data) => children(data, "X509Certificate"))
    .map((cert) => cert._ ?? "")
    .filter((text) => text.trim() !== "")
    .map(toPemCertificate);
  if (certificates.length === 0) throw new Error("no signing certificate (KeyDescriptor use=signing)");
  return { entityId, ssoUrl, certificates, fetchedAt };
}

async function fetchMetadata(services: Services, metadataUrl: string): Promise<string> {
  const options = ssoOptions(services);
  // The outbound fetch reads the body under its own cap (lib/outbound-fetch.ts).
  const response = await options.fetch(metadataUrl, {
    headers: { accept: "application/samlmetadata+xml, application/xml, text/xml" },
    redirect: "error",
    signal: AbortSignal.timeout(options.requestTimeoutSeconds * 1000),
  });
  if (!response.ok) throw new Error(`HTTP ${response.status}`);
  return await response.text();
}

/**
 * The provider's IdP metadata: the stored copy while it is fresh, else fetched, stored and
 * returned. A fetch that fails falls back to a stored copy of any age (the IdP being down for a
 * moment should not stop sign-ins it would have accepted).
 */
export async function idpMetadataOf(
  services: Services,
  provider: SamlProviderRecord,
): Promise<SamlIdpMetadata> {
  const options = ssoOptions(services);
  const now = services.clock.now();
  const stored = provider.idpMetadata;
  if (stored && now.getTime() - stored.fetchedAt.getTime() < options.metadataTtlSeconds * 1000) return stored;

  let url: URL;
  try {
    url = new URL(provider.metadataUrl);
  } catch {
    throw new FailedPreconditionError(`the SAML metadata URL ${provider.metadataUrl} is not a URL`);
  }
  if (!isAllowedIdpUrl(url, options)) {
    throw new FailedPreconditionError(`the SAML metadata URL ${provider.metadataUrl} must use https`, {
      reason: "SSO_INSECURE_METADATA_URL",
    });
  }
  let metadata: SamlIdpMetadata;
  const failureKey = `saml ${provider.metadataUrl}`;
  const failed = options.documentFailures.recall(failureKey);
  if (failed !== undefined) {
    if (stored) return stored;
    throw failed;
  }
  try {
    metadata = await parseIdpMetadata(await fetchMetadata(services, provider.metadataUrl), now);
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    const failure = new UnavailableError(
      `could not read the SAML metadata at ${provider.metadataUrl}: ${detail}`,
      { reason: "SSO_METADATA_UNAVAILABLE", cause: error },
    );
    options.documentFailures.remember(failureKey, failure);
    if (stored) return stored;
    throw failure;
  }
  await services.storage.samlProviders.setIdpMetadata(provider.workspaceId, provider.metadataUrl, metadata);
  return metadata;
}
