/**
 * A SAML identity provider for tests: an RSA key and certificate made by openssl, its metadata
 * served over loopback HTTP, and responses built and signed (xml-crypto, through node-saml's
 * signing helper) the way real IdPs build them.
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inflateRawSync } from "node:zlib";
import { signSamlPost } from "@node-saml/node-saml/lib/saml-post-signing.js";

export interface KeyPair {
  readonly privateKey: string;
  readonly certificate: string;
}

/** A self-signed RSA-2048 certificate and its key, from openssl. */
export function generateIdpKey(commonName: string): KeyPair {
  const dir = mkdtempSync(join(tmpdir(), "wap-saml-"));
  try {
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-sha256",
        "-days",
        "2",
        "-subj",
        `/CN=${commonName}`,
        "-keyout",
        join(dir, "key.pem"),
        "-out",
        join(dir, "cert.pem"),
      ],
      { stdio: "ignore" },
    );
    return {
      privateKey: readFileSync(join(dir, "key.pem"), "utf8"),
      certificate: readFileSync(join(dir, "cert.pem"), "utf8"),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function certificateBody(pem: string): string {
  return pem.replace(/-----(BEGIN|END) CERTIFICATE-----/g, "").replace(/\s+/g, "");
}

export const idpEntityId = "https://idp.test.example/saml/metadata";
export const idpSsoUrl = "https://idp.test.example/saml/sso";

export function idpMetadataXml(certificatePem: string): string {
  return `<?xml version="1.0"?>
<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" xmlns:ds="http://www.w3.org/2000/09/xmldsig#" entityID="${idpEntityId}">
  <md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol" WantAuthnRequestsSigned="false">
    <md:KeyDescriptor use="signing">
      <ds:KeyInfo><ds:X509Data><ds:X509Certificate>
${certificateBody(certificatePem)}
      </ds:X509Certificate></ds:X509Data></ds:KeyInfo>
    </md:KeyDescriptor>
    <md:NameIDFormat>urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress</md:NameIDFormat>
    <md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${idpSsoUrl}/post"/>
    <md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="${idpSsoUrl}"/>
  </md:IDPSSODescriptor>
</md:EntityDescriptor>`;
}

/** Serves the metadata over loopback HTTP and counts the fetches. */
export async function serveMetadata(
  xml: () => string,
): Promise<{ url: string; fetches: () => number; close(): Promise<void> }> {
  let count = 0;
  const server: Server = createServer((_req, res) => {
    count++;
    res.writeHead(200, { "content-type": "application/samlmetadata+xml" });
    res.end(xml());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metadata`;
  return {
    url,
    fetches: () => count,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The AuthnRequest inside an HTTP-Redirect sign-in URL. */
export function readAuthnRequest(url: string): { id: string; xml: string } {
  const encoded = new URL(url).searchParams.get("SAMLRequest");
  if (!encoded) throw new Error("no SAMLRequest in the URL");
  const xml = inflateRawSync(Buffer.from(encoded, "base64")).toString("utf8");
  const id = /\sID="([^"]+)"/.exec(xml)?.[1];
  if (!id) throw new Error("the AuthnRequest has no ID");
  return { id, xml };
}

export interface AssertionOptions {
  readonly inResponseTo?: string;
  /** Put InResponseTo in the SubjectConfirmationData too (real IdPs do). Default true. */
  readonly confirmInResponseTo?: boolean;
  readonly acsUrl: string;
  readonly audience: string;
  readonly issuer?: string;
  readonly nameId: string;
  readonly nameIdFormat?: string;
  readonly attributes?: Readonly<Record<string, string>>;
  readonly assertionId?: string;
  /** When the assertion was issued; validity is 5 minutes from then. Default now. */
  readonly issuedAt?: Date;
}

const iso = (date: Date) => date.toISOString();
const xmlEscape = (text: string) =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

/** An unsigned Response with one Assertion. */
export function buildResponse(options: AssertionOptions): string {
  const issued = options.issuedAt ?? new Date();
  const notBefore = new Date(issued.getTime() - 30_000);
  const notOnOrAfter = new Date(issued.getTime() + 5 * 60_000);
  const issuer = options.issuer ?? idpEntityId;
  const inResponseTo = options.inResponseTo ? ` InResponseTo="${options.inResponseTo}"` : "";
  const confirm = options.confirmInResponseTo === false ? "" : inResponseTo;
  const attributes = Object.entries(options.attributes ?? {})
    .map(
      ([name, value]) =>
        `<saml:Attribute Name="${xmlEscape(name)}"><saml:AttributeValue>${xmlEscape(value)}</saml:AttributeValue></saml:Attribute>`,
    )
    .join("");
  const assertionId = options.assertionId ?? `_a${randomBytes(16).toString("hex")}`;
  return (
    `<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" ID="_r${randomBytes(16).toString("hex")}" Version="2.0" IssueInstant="${iso(issued)}" Destination="${options.acsUrl}"${inResponseTo}>` +
    `<saml:Issuer xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion">${issuer}</saml:Issuer>` +
    `<samlp:Status><samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:Success"/></samlp:Status>` +
    `<saml:Assertion xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="${assertionId}" Version="2.0" IssueInstant="${iso(issued)}">` +
    `<saml:Issuer>${issuer}</saml:Issuer>` +
    `<saml:Subject><saml:NameID Format="${options.nameIdFormat ?? "urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress"}">${xmlEscape(options.nameId)}</saml:NameID>` +
    `<saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer"><saml:SubjectConfirmationData${confirm} NotOnOrAfter="${iso(notOnOrAfter)}" Recipient="${options.acsUrl}"/></saml:SubjectConfirmation></saml:Subject>` +
    `<saml:Conditions NotBefore="${iso(notBefore)}" NotOnOrAfter="${iso(notOnOrAfter)}"><saml:AudienceRestriction><saml:Audience>${options.audience}</saml:Audience></saml:AudienceRestriction></saml:Conditions>` +
    `<saml:AuthnStatement AuthnInstant="${iso(issued)}" SessionIndex="_s${randomBytes(8).toString("hex")}"><saml:AuthnContext><saml:AuthnContextClassRef>urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport</saml:AuthnContextClassRef></saml:AuthnContext></saml:AuthnStatement>` +
    `<saml:AttributeStatement>${attributes}</saml:AttributeStatement>` +
    `</saml:Assertion></samlp:Response>`
  );
}

const assertionXPath = "/*[local-name(.)='Response']/*[local-name(.)='Assertion']";
const responseXPath = "/*[local-name(.)='Response']";

/** Signs the Assertion (enveloped, exclusive C14N, RSA-SHA256), as most IdPs do. */
export function signAssertion(xml: string, key: KeyPair): string {
  return signSamlPost(xml, assertionXPath, {
    privateKey: key.privateKey,
    publicCert: key.certificate,
    signatureAlgorithm: "sha256",
    digestAlgorithm: "sha256",
  });
}

/** Signs the whole Response. */
export function signResponse(xml: string, key: KeyPair): string {
  return signSamlPost(xml, responseXPath, {
    privateKey: key.privateKey,
    publicCert: key.certificate,
    signatureAlgorithm: "sha256",
    digestAlgorithm: "sha256",
  });
}

/** The form field an IdP posts to the ACS. */
export const toPostedResponse = (xml: string) => Buffer.from(xml, "utf8").toString("base64");
